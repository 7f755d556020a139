// Package objstore is an S3-compatible bucket (AWS S3, Cloudflare R2,
// MinIO, Ceph): put with SHA-256, stat, get, list, through minio-go.
//
// Every object is put in one PUT (S3 replaces an object atomically, so a
// reader sees the old object, the new one, or none — never part of one)
// with its SHA-256 as the user metadata x-amz-meta-sha256 (hex) and as
// S3's x-amz-checksum-sha256, which the server checks against the bytes it
// received: a truncated or damaged upload fails instead of landing.
//
// Credentials come from Config's keys when set, otherwise from the
// environment as the AWS SDK reads them: AWS_ACCESS_KEY_ID,
// AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN, then the shared credentials
// file (~/.aws/credentials, AWS_SHARED_CREDENTIALS_FILE, AWS_PROFILE), then
// the EC2/ECS/EKS instance role.
package objstore

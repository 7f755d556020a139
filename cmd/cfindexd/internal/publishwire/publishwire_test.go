package publishwire

import (
	"strings"
	"testing"
)

// TestKeysCheck: each half-set combination of the s3* keys is an error
// naming the key at fault; complete ones pass.
func TestKeysCheck(t *testing.T) {
	full := Keys{Endpoint: "127.0.0.1:9000", Bucket: "b"}
	for _, tc := range []struct {
		name string
		k    Keys
		want string // "" for no error
	}{
		{"off", Keys{}, ""},
		{"bucket and endpoint", full, ""},
		{"with keys and prefix", Keys{Endpoint: "s3.amazonaws.com", Bucket: "b", Prefix: "main", AccessKey: "a", SecretKey: "s"}, ""},
		{"endpoint alone", Keys{Endpoint: "h:1"}, "s3endpoint is set but s3bucket is not"},
		{"prefix alone", Keys{Prefix: "p"}, "s3prefix is set but s3bucket is not"},
		{"insecure alone", Keys{Insecure: true}, "s3insecure is set but s3bucket is not"},
		{"secret alone", Keys{SecretKey: "s"}, "s3secretkey is set but s3bucket is not"},
		{"bucket alone", Keys{Bucket: "b"}, "s3endpoint is not"},
		{"access key alone", Keys{Endpoint: "h:1", Bucket: "b", AccessKey: "a"}, "set both, or neither"},
		{"prefix slash", Keys{Endpoint: "h:1", Bucket: "b", Prefix: "/p"}, "leading or trailing slash"},
		{"endpoint scheme", Keys{Endpoint: "https://h", Bucket: "b"}, "without a scheme"},
	} {
		err := tc.k.Check()
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	if got := full.bucketConfig(func(string) string { return "eu-west-1" }); got.Region != "eu-west-1" {
		t.Errorf("region from AWS_REGION: %q", got.Region)
	}
}

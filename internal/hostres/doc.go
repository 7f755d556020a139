// Package hostres reads the limits the host puts on the daemon: the hard
// memory limit of its cgroup (v2) and the free space of a filesystem. It
// keeps no state; where the host cannot tell, it says so.
package hostres

//go:build js && wasm

// Replaces os/sys_bsd.go in settle's js/wasm builds (src/go/build.ts): on js the host name is the fixed "js", and
// settle gives each instance of a program its own (the pod it would be), through the environment's HOSTNAME.

package os

import "syscall"

func hostname() (name string, err error) {
	if name, ok := syscall.Getenv("HOSTNAME"); ok && name != "" {
		return name, nil
	}
	return syscall.Sysctl("kern.hostname")
}

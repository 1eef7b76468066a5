// Package addresstree writes the file tree a listener volume shows a pod:
//
//	addresses/<address>/address            the address, no trailing newline
//	addresses/<address>/ports/<port name>  the port number
//	default-address -> addresses/<first address>
//
// Addresses and port names come from API objects that users can write, so
// they are validated (an IP or a DNS name; a DNS label) before anything
// touches the disk, and every file operation goes through an os.Root opened
// on the target, so nothing can land outside it.
//
// Updates are atomic the way kubelet's AtomicWriter makes them: the tree is
// built in a fresh hidden directory, the "..data" symlink is swapped to it
// with a rename, and the visible names are fixed symlinks through "..data".
// A reader sees either the old tree or the new one, never a mix.
package addresstree

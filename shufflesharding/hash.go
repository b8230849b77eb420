package shufflesharding

import (
	"crypto/sha256"
	"encoding/binary"
)

// FlowHash returns the 64-bit hash that API Priority and Fairness uses to
// shuffle-shard a flow, identified by its FlowSchema name and flow
// distinguisher (the user name or namespace, or "" when the schema has no
// distinguisher method).
//
// It is the first 8 bytes, read little-endian, of the SHA-256 of the schema
// name, one zero byte, and the distinguisher: bit-identical to the value
// upstream k8s.io/apiserver v0.37.2 computes, so the same flow gets the same
// hand. Inputs up to about 250 bytes in total are hashed without allocating.
func FlowHash(flowSchemaName, distinguisher string) uint64 {
	var buf [256]byte
	b := append(buf[:0], flowSchemaName...)
	b = append(b, 0)
	b = append(b, distinguisher...)
	sum := sha256.Sum256(b)
	return binary.LittleEndian.Uint64(sum[:8])
}

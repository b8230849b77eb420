package apf

import (
	"crypto/sha256"
	"encoding/hex"

	"github.com/fairslice/fairslice/flowschema"
)

// The response headers naming the matched objects by UID (not by name, so
// that clients learn nothing about the server's classification scheme).
const (
	HeaderFlowSchemaUID    = "X-Kubernetes-PF-FlowSchema-UID"
	HeaderPriorityLevelUID = "X-Kubernetes-PF-PriorityLevel-UID"
)

// objectUID returns a stable UUID-shaped identifier for an object of kind
// named name. Configurations read from files carry no UIDs (the API server
// assigns them), so the controller derives one that is the same on every
// server with the same configuration.
func objectUID(kind, name string) string {
	sum := sha256.Sum256([]byte(kind + "/" + name))
	sum[6] = sum[6]&0x0f | 0x50 // version 5 layout, as name-based UUIDs
	sum[8] = sum[8]&0x3f | 0x80
	b := hex.EncodeToString(sum[:16])
	return b[0:8] + "-" + b[8:12] + "-" + b[12:16] + "-" + b[16:20] + "-" + b[20:32]
}

func levelUID(pl *flowschema.PriorityLevelConfiguration) string {
	return objectUID(flowschema.KindPL, pl.Name)
}

func schemaUID(fs *flowschema.FlowSchema) string {
	return objectUID(flowschema.KindFS, fs.Name)
}

package onnx

import "github.com/sqc-dev/sqc/compiler"

// supportedOp reports whether sqc compiles op from the given domain: the op
// must be in compiler's op table (compiler/ops.go, the one source of truth
// for ops) as an op of the default ONNX domain. Nodes from any other domain
// (ai.onnx.ml, model-local functions) are unsupported, except the
// com.microsoft ops that contrib.go expands into default-domain ones, and
// the default-domain function ops that functions.go expands; sqc's
// own ops live in the table too but are not accepted from files.
func supportedOp(domain, op string) bool {
	if isContribOp(domain, op) || isFunctionOp(domain, op) {
		return true
	}
	if !isDefaultDomain(domain) {
		return false
	}
	def, ok := compiler.LookupOp(op)
	return ok && def.Domain == ""
}

// isDefaultDomain reports whether domain names the default ONNX op set,
// written "" or "ai.onnx".
func isDefaultDomain(domain string) bool { return domain == "" || domain == "ai.onnx" }

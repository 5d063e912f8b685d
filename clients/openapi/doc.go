// Package openapi proves ticketd's OpenAPI description, httpapi/openapi.json
// (served at GET /openapi.json): its test generates a Go client from the
// description with oapi-codegen and drives a real cluster with that client
// alone, with no hand-written code between them. It creates sequences,
// reserves ranges and reads problem documents. Applications should use the
// SDK (package client), which adds retries, endpoint failover and leader
// hints.
//
// No generated code is kept in the repository. The test copies
// testdata/module (a Go module of its own) into a temporary directory,
// generates the client there with "go tool oapi-codegen" (oapi-codegen
// v2.8.2, pinned as a tool in that module's go.mod and verified by its
// go.sum, so it never enters the server's go.mod), checks that the module
// is then tidy and vet-clean, starts a 3-node cluster and runs
// testdata/module/openapi/client_test.go against it. A change to the
// description is thus tested against its client in the same run; there is
// no committed copy to fall behind.
//
// The description is OpenAPI 3.1 and the generator reads it as it is, with
// no 3.0 copy derived for it: oapi-codegen v2.8.2 (which loads documents
// with kin-openapi v0.142.0) handles the 3.1 idioms used here, type arrays
// with "null" (Sequence.Next is a *int64), oneOf with {"type": "null"}
// (RangeInspection.Block is a *AuditRecord), "const" (each problem
// response's type and status become single-value enums) and bearer
// security requirements that name scopes. Bearer tokens are sent with a
// RequestEditorFn (WithRequestEditorFn): oapi-codegen generates no
// authentication for clients.
package openapi

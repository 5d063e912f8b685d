// Package openapi is a client of ticketd's HTTP API generated from the
// API's OpenAPI description, httpapi/openapi.json, by oapi-codegen v2.8.2
// (client.gen.go; configuration in oapi-codegen.yaml). It exists to prove
// the description: a client made from it alone, with no hand-written code,
// creates sequences, reserves ranges and reads problem documents against a
// real cluster (client_test.go), and scripts/openapi-check.sh fails when
// client.gen.go is not what the generator makes of the committed
// description. Applications should use the SDK (package client), which adds
// retries, endpoint failover and leader hints.
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
//
// The generator runs with "go run ...@v2.8.2", so that neither it nor its
// dependencies enter go.mod; the generated code needs only
// github.com/oapi-codegen/runtime.
package openapi

//go:generate go run github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen@v2.8.2 -config oapi-codegen.yaml ../../httpapi/openapi.json

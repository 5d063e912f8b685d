package main

import (
	"encoding/json"
	"maps"
	"testing"
	"time"

	"github.com/ticketd/ticketd/pki"
)

// FuzzSecretAnswer: whatever the API server answers to a GET of the TLS
// Secret, parsing it and judging each node's pair never panics; a pair is
// kept only if it is one the CA issued for the names asked, and writing
// the Secret back keeps every field of the answer.
func FuzzSecretAnswer(f *testing.F) {
	ca, err := pki.NewCA(pki.CAOptions{CommonName: "fuzz CA"})
	if err != nil {
		f.Fatal(err)
	}
	cert, key, err := ca.Issue(pki.CertOptions{CommonName: "n1", Usage: pki.Node, DNSNames: []string{"n1"}})
	if err != nil {
		f.Fatal(err)
	}
	good, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "t", "resourceVersion": "7"},
		"data": map[string][]byte{"n1.pem": cert, "n1-key.pem": key, "ca.pem": ca.CertPEM()}})
	f.Add(good)
	f.Add([]byte(`{"data":null}`))
	f.Add([]byte(`{"data":{"n1.pem":"!!"}}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`{"data":{"n1.pem":"LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCi0tLS0tRU5EIENFUlRJRklDQVRFLS0tLS0K","n1-key.pem":""}}`))
	k := &k8sTLSInit{now: time.Now(), renewBefore: time.Hour}
	f.Fuzz(func(t *testing.T, body []byte) {
		s, err := parseSecret("t", body)
		if err != nil {
			return
		}
		why := k.reissueReason(ca, s.data["n1.pem"], s.data["n1-key.pem"], []string{"n1"}, nil)
		if why == "" && string(s.data["n1.pem"]) != string(cert) {
			// Another pair the CA issued for n1 would be as good;
			// the fuzzer cannot make one without the CA's key.
			t.Fatalf("kept a pair the CA did not issue: %q", s.data["n1.pem"])
		}
		s.data["x"] = []byte("y")
		raw := maps.Clone(s.raw)
		out, err := s.encode()
		if err != nil {
			t.Fatalf("the Secret cannot be written back: %v", err)
		}
		var back map[string]json.RawMessage
		if err := json.Unmarshal(out, &back); err != nil {
			t.Fatal(err)
		}
		for k, v := range raw {
			if _, ok := back[k]; !ok || (k != "data" && string(back[k]) != string(v)) {
				t.Fatalf("writing back changed field %q: %s, was %s", k, back[k], v)
			}
		}
		var d map[string][]byte
		if json.Unmarshal(back["data"], &d) != nil || string(d["x"]) != "y" {
			t.Fatalf("writing back lost the new data: %s", back["data"])
		}
	})
}

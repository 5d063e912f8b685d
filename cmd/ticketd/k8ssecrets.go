package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// The subset of the Kubernetes Secrets API that `tls init --k8s-secret`
// needs: get, create and replace one Secret, in the pod's own namespace,
// with the pod's service-account token, over plain net/http. client-go
// would bring a hundred modules into the server's go.mod for three calls
// (DESIGN.md of the Helm chart, G6); the REST calls are stable since v1.

// defaultServiceAccountDir is where the kubelet mounts a pod's
// service-account token, the cluster's CA and the pod's namespace.
const defaultServiceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"

// errSecretExists is a create that found the Secret made meanwhile.
var errSecretExists = errors.New("secret already exists")

// secretsClient reaches /api/v1/namespaces/NS/secrets of the API server.
type secretsClient struct {
	base      string // https://host:port/api/v1/namespaces/NS/secrets
	namespace string
	token     string
	hc        *http.Client
}

// inClusterSecrets is a secretsClient as a pod sees the API server: its
// address from KUBERNETES_SERVICE_HOST and _PORT, and the token, CA and
// namespace files in saDir.
func inClusterSecrets(saDir string) (*secretsClient, error) {
	host, port := os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT")
	if host == "" || port == "" {
		return nil, errors.New("--k8s-secret works inside a Kubernetes pod: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set")
	}
	read := func(name string) ([]byte, error) {
		b, err := os.ReadFile(filepath.Join(saDir, name))
		if err != nil {
			return nil, fmt.Errorf("the pod's service account: %w (is automountServiceAccountToken off for this pod?)", err)
		}
		return b, nil
	}
	token, err := read("token")
	if err != nil {
		return nil, err
	}
	caPEM, err := read("ca.crt")
	if err != nil {
		return nil, err
	}
	ns, err := read("namespace")
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("%s holds no PEM certificate", filepath.Join(saDir, "ca.crt"))
	}
	namespace := strings.TrimSpace(string(ns))
	if namespace == "" {
		return nil, fmt.Errorf("%s is empty", filepath.Join(saDir, "namespace"))
	}
	return &secretsClient{
		base:      "https://" + net.JoinHostPort(host, port) + "/api/v1/namespaces/" + url.PathEscape(namespace) + "/secrets",
		namespace: namespace,
		token:     strings.TrimSpace(string(token)),
		hc: &http.Client{
			Timeout:   30 * time.Second,
			Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}},
		},
	}, nil
}

// secret is a Secret as read: its data, and the whole object, so that a
// replace sends back every field this code does not know (labels,
// annotations, owner references, resourceVersion for the server's
// optimistic concurrency) as it found them.
type secret struct {
	name string
	data map[string][]byte
	raw  map[string]json.RawMessage
}

// get reads the Secret name; found is false when it does not exist.
func (c *secretsClient) get(ctx context.Context, name string) (s *secret, found bool, err error) {
	body, status, err := c.do(ctx, http.MethodGet, "/"+url.PathEscape(name), nil)
	if err != nil {
		return nil, false, err
	}
	if status == http.StatusNotFound {
		return nil, false, nil
	}
	if status != http.StatusOK {
		return nil, false, c.statusError("read", name, status, body)
	}
	s, err = parseSecret(name, body)
	if err != nil {
		return nil, false, fmt.Errorf("secret %s/%s: %w", c.namespace, name, err)
	}
	return s, true, nil
}

// parseSecret reads the API server's answer to a GET of the Secret name.
func parseSecret(name string, body []byte) (*secret, error) {
	s := &secret{name: name}
	if err := json.Unmarshal(body, &s.raw); err != nil || s.raw == nil {
		return nil, fmt.Errorf("the API server's answer is not an object: %v", err)
	}
	if d, ok := s.raw["data"]; ok && string(d) != "null" {
		if err := json.Unmarshal(d, &s.data); err != nil {
			return nil, fmt.Errorf("its data is not base64 values: %v", err)
		}
	}
	if s.data == nil {
		s.data = map[string][]byte{}
	}
	return s, nil
}

// encode is the object as read with its data as it is now.
func (s *secret) encode() ([]byte, error) {
	data, err := json.Marshal(s.data)
	if err != nil {
		return nil, err
	}
	s.raw["data"] = data
	return json.Marshal(s.raw)
}

// create makes the Secret name (type Opaque) holding data.
func (c *secretsClient) create(ctx context.Context, name string, data map[string][]byte) error {
	obj := map[string]any{
		"apiVersion": "v1",
		"kind":       "Secret",
		"metadata": map[string]any{
			"name":   name,
			"labels": map[string]string{"app.kubernetes.io/managed-by": "ticketd-tls-init"},
		},
		"type": "Opaque",
		"data": data,
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	body, status, err := c.do(ctx, http.MethodPost, "", b)
	switch {
	case err != nil:
		return err
	case status == http.StatusConflict:
		return fmt.Errorf("secret %s/%s: %w (another run made it meanwhile): run again", c.namespace, name, errSecretExists)
	case status != http.StatusCreated && status != http.StatusOK:
		return c.statusError("create", name, status, body)
	}
	return nil
}

// replace writes s back with its data as it is now; a Secret changed since
// s was read is refused by the API server (409) and reported as such.
func (c *secretsClient) replace(ctx context.Context, s *secret) error {
	b, err := s.encode()
	if err != nil {
		return err
	}
	body, status, err := c.do(ctx, http.MethodPut, "/"+url.PathEscape(s.name), b)
	switch {
	case err != nil:
		return err
	case status == http.StatusConflict:
		return fmt.Errorf("secret %s/%s changed while this run updated it (409 Conflict): run again", c.namespace, s.name)
	case status != http.StatusOK:
		return c.statusError("update", s.name, status, body)
	}
	return nil
}

func (c *secretsClient) do(ctx context.Context, method, path string, body []byte) ([]byte, int, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return nil, 0, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, 0, fmt.Errorf("the Kubernetes API at %s: %w", strings.TrimSuffix(c.base, "/api/v1/namespaces/"+url.PathEscape(c.namespace)+"/secrets"), err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return nil, 0, err
	}
	return b, resp.StatusCode, nil
}

// statusError names the call, the Secret and what the API server said (its
// Status object's message), with the usual cause of a 401 or 403.
func (c *secretsClient) statusError(verb, name string, status int, body []byte) error {
	var st struct {
		Message string `json:"message"`
		Reason  string `json:"reason"`
	}
	msg := strings.TrimSpace(string(body))
	if json.Unmarshal(body, &st) == nil && st.Message != "" {
		msg = st.Message
	}
	if len(msg) > 300 {
		msg = msg[:300] + "..."
	}
	err := fmt.Errorf("%s secret %s/%s: %d %s: %s", verb, c.namespace, name, status, http.StatusText(status), msg)
	switch status {
	case http.StatusUnauthorized:
		return fmt.Errorf("%w (the service-account token was refused)", err)
	case http.StatusForbidden:
		return fmt.Errorf("%w (the Job's service account needs a Role granting get, create and update on secrets)", err)
	}
	return err
}

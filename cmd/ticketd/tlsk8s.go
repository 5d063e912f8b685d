package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/ticketd/ticketd/pki"
)

// `tls init --k8s-secret` (issue 43, G6): what `tls init` does with files,
// done with Secrets by a Helm hook Job that runs the FROM scratch image (no
// shell, no kubectl). It makes what is missing and never replaces what is
// good, so it runs before every install and upgrade:
//
//   - the CA Secret (ca.pem, ca-key.pem), if absent. The CA is never
//     renewed here: a new CA needs the two-CA bundle of docs/operations.md;
//   - the TLS Secret (ca.pem, ID.pem and ID-key.pem per node), each node's
//     pair issued when it is missing, not signed by the CA, does not name
//     what it should, or expires within --renew-before. Everything else in
//     the Secret is kept;
//   - with --k8s-auth-secret, the tokens Secret (tokens, admin.token,
//     reserve.token) if absent, from crypto/rand. An existing one is never
//     changed: nodes read their tokens once, at start.

// k8sInitFlags are the flags of `tls init` that --k8s-secret reads; set
// names the flags given on the command line.
type k8sInitFlags struct {
	secret, caSecret, authSecret, saDir string
	renewBefore                         time.Duration
	ids, dns, ips                       []string
	loopback                            bool
	set                                 map[string]bool
}

// tlsInitK8s checks the flags of `tls init --k8s-secret`, then runs it
// against the API server this pod reaches.
func tlsInitK8s(f k8sInitFlags, stdout io.Writer) error {
	switch {
	case f.secret == "" || f.caSecret == "":
		return usageError{"tls init: --k8s-secret and --k8s-ca-secret go together: the node certificates' Secret and the CA's"}
	case f.secret == f.caSecret || f.secret == f.authSecret || f.caSecret == f.authSecret:
		return usageError{"tls init: --k8s-secret, --k8s-ca-secret and --k8s-auth-secret must name three different Secrets (the servers mount the first, never the CA's key)"}
	case f.set["dir"] || f.set["ca-key-dir"]:
		return usageError{"tls init: --dir and --ca-key-dir are for files; with --k8s-secret everything goes to Secrets"}
	case f.renewBefore < 0:
		return usageError{fmt.Sprintf("--renew-before %s: want 0 or more", f.renewBefore)}
	case f.renewBefore >= pki.DefaultCertDays*24*time.Hour:
		return usageError{fmt.Sprintf("--renew-before %s is not shorter than a certificate's lifetime (%d days): every run would issue every certificate again", f.renewBefore, pki.DefaultCertDays)}
	}
	if err := checkSecretKeys(f.ids); err != nil {
		return usageError{err.Error()}
	}
	var ips []net.IP
	for _, a := range f.ips {
		ip := net.ParseIP(a)
		if ip == nil {
			return usageError{fmt.Sprintf("--ip: %q is not an IP address", a)}
		}
		ips = append(ips, ip)
	}
	sc, err := inClusterSecrets(f.saDir)
	if err != nil {
		return err
	}
	k := &k8sTLSInit{secrets: sc, caName: f.caSecret, tlsName: f.secret, authName: f.authSecret,
		ids: f.ids, dns: f.dns, ips: ips, loopback: f.loopback, renewBefore: f.renewBefore, now: time.Now(), out: stdout}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	return k.run(ctx)
}

// k8sTLSInit is one run of `tls init --k8s-secret`.
type k8sTLSInit struct {
	secrets                   *secretsClient
	caName, tlsName, authName string
	ids                       []string
	dns                       []string // templates: {id} is each node's ID
	ips                       []net.IP
	loopback                  bool
	renewBefore               time.Duration
	now                       time.Time
	out                       io.Writer
}

// secretKey is what Kubernetes accepts as a key of a Secret's data.
var secretKey = regexp.MustCompile(`^[-._a-zA-Z0-9]+$`)

// checkSecretKeys refuses node IDs that cannot be keys of the TLS Secret.
func checkSecretKeys(ids []string) error {
	for _, id := range ids {
		if !secretKey.MatchString(id) {
			return fmt.Errorf("--nodes: %q cannot name a key of a Secret (letters, digits, '-', '_' and '.')", id)
		}
	}
	return nil
}

func (k *k8sTLSInit) run(ctx context.Context) error {
	ca, err := k.ensureCA(ctx)
	if err != nil {
		return err
	}
	if err := k.ensureCerts(ctx, ca); err != nil {
		return err
	}
	if k.authName != "" {
		return k.ensureTokens(ctx)
	}
	return nil
}

func (k *k8sTLSInit) ensureCA(ctx context.Context) (*pki.CA, error) {
	s, found, err := k.secrets.get(ctx, k.caName)
	if err != nil {
		return nil, err
	}
	if !found {
		ca, err := pki.NewCA(pki.CAOptions{CommonName: "ticketd cluster CA", Now: k.now})
		if err != nil {
			return nil, err
		}
		keyPEM, err := ca.KeyPEM()
		if err != nil {
			return nil, err
		}
		if err := k.secrets.create(ctx, k.caName, map[string][]byte{"ca.pem": ca.CertPEM(), "ca-key.pem": keyPEM}); err != nil {
			return nil, err
		}
		fmt.Fprintf(k.out, "created Secret %s/%s: a CA valid until %s\n", k.secrets.namespace, k.caName, ca.Cert.NotAfter.UTC().Format(time.DateOnly))
		return ca, nil
	}
	certPEM, keyPEM := s.data["ca.pem"], s.data["ca-key.pem"]
	if len(certPEM) == 0 || len(keyPEM) == 0 {
		return nil, fmt.Errorf("secret %s/%s exists but has no ca.pem and ca-key.pem: it is no CA this command made; delete it, or name another with --k8s-ca-secret", k.secrets.namespace, k.caName)
	}
	ca, err := pki.LoadCA(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("secret %s/%s: %w", k.secrets.namespace, k.caName, err)
	}
	if left := ca.Cert.NotAfter.Sub(k.now); left < k.renewBefore {
		fmt.Fprintf(k.out, "warning: the CA in Secret %s/%s expires at %s, within --renew-before; it is not renewed here: rotate it with a two-CA bundle (docs/operations.md, TLS)\n",
			k.secrets.namespace, k.caName, ca.Cert.NotAfter.UTC().Format(time.RFC3339))
	}
	return ca, nil
}

// nodeNames are the DNS names and IPs node id's certificate must carry.
func (k *k8sTLSInit) nodeNames(id string) ([]string, []net.IP) {
	dns := []string{id}
	ips := slices.Clone(k.ips)
	if k.loopback {
		dns = append(dns, "localhost")
		ips = append(ips, net.IPv4(127, 0, 0, 1), net.IPv6loopback)
	}
	dns = append(dns, expandDNS(k.dns, id)...)
	return dns, ips
}

func (k *k8sTLSInit) ensureCerts(ctx context.Context, ca *pki.CA) error {
	s, found, err := k.secrets.get(ctx, k.tlsName)
	if err != nil {
		return err
	}
	data := map[string][]byte{}
	if found {
		data = s.data
	}
	changed := false
	if !bytes.Equal(data["ca.pem"], ca.CertPEM()) {
		data["ca.pem"] = ca.CertPEM()
		changed = true
	}
	var current []string
	for _, id := range k.ids {
		dns, ips := k.nodeNames(id)
		why := k.reissueReason(ca, data[id+".pem"], data[id+"-key.pem"], dns, ips)
		if why == "" {
			current = append(current, id)
			continue
		}
		certPEM, keyPEM, err := ca.Issue(pki.CertOptions{CommonName: id, Usage: pki.Node, DNSNames: dns, IPs: ips, Now: k.now})
		if err != nil {
			return fmt.Errorf("node %s: %w", id, err)
		}
		data[id+".pem"], data[id+"-key.pem"] = certPEM, keyPEM
		changed = true
		fmt.Fprintf(k.out, "issued %s.pem in Secret %s/%s: %s\n", id, k.secrets.namespace, k.tlsName, why)
	}
	switch {
	case !found:
		err = k.secrets.create(ctx, k.tlsName, data)
	case changed:
		err = k.secrets.replace(ctx, s)
	}
	if err != nil {
		return err
	}
	if len(current) > 0 {
		fmt.Fprintf(k.out, "kept %s in Secret %s/%s: current\n", strings.Join(current, ", "), k.secrets.namespace, k.tlsName)
	}
	return nil
}

// reissueReason says why a node's pair must be issued again, or "" when it
// is good: present, signed by ca, its key its own, naming exactly dns and
// ips, and valid for longer than --renew-before.
func (k *k8sTLSInit) reissueReason(ca *pki.CA, certPEM, keyPEM []byte, dns []string, ips []net.IP) string {
	if len(certPEM) == 0 || len(keyPEM) == 0 {
		return "it had none"
	}
	// X509KeyPair also checks that the key is the certificate's.
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return fmt.Sprintf("its certificate and key are unusable (%v)", err)
	}
	cert := pair.Leaf
	if cert == nil {
		if cert, err = x509.ParseCertificate(pair.Certificate[0]); err != nil {
			return "its certificate is unreadable"
		}
	}
	if err := cert.CheckSignatureFrom(ca.Cert); err != nil {
		return "its certificate is not signed by the CA"
	}
	if !sameNames(cert.DNSNames, dns) || !sameIPs(cert.IPAddresses, ips) {
		return fmt.Sprintf("it named %s, not %s", describeNames(cert.DNSNames, cert.IPAddresses), describeNames(dns, ips))
	}
	if left := cert.NotAfter.Sub(k.now); left < k.renewBefore {
		return fmt.Sprintf("it expires at %s, within --renew-before %s", cert.NotAfter.UTC().Format(time.RFC3339), k.renewBefore)
	}
	return ""
}

func sameNames(a, b []string) bool {
	return slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b)))
}

func sameIPs(a, b []net.IP) bool {
	str := func(ips []net.IP) []string {
		var out []string
		for _, ip := range ips {
			out = append(out, ip.String())
		}
		return out
	}
	return sameNames(str(a), str(b))
}

func describeNames(dns []string, ips []net.IP) string {
	names := slices.Clone(dns)
	for _, ip := range ips {
		names = append(names, ip.String())
	}
	slices.Sort(names)
	return "[" + strings.Join(names, " ") + "]"
}

func (k *k8sTLSInit) ensureTokens(ctx context.Context) error {
	_, found, err := k.secrets.get(ctx, k.authName)
	if err != nil {
		return err
	}
	if found {
		fmt.Fprintf(k.out, "kept Secret %s/%s: tokens are never replaced here (nodes read them at start)\n", k.secrets.namespace, k.authName)
		return nil
	}
	admin, err := newToken()
	if err != nil {
		return err
	}
	reserve, err := newToken()
	if err != nil {
		return err
	}
	data := map[string][]byte{
		"tokens":        []byte("# SCOPES TOKEN, made by ticketd tls init\nadmin " + admin + "\nreserve " + reserve + "\n"),
		"admin.token":   []byte(admin + "\n"),
		"reserve.token": []byte(reserve + "\n"),
	}
	if err := k.secrets.create(ctx, k.authName, data); err != nil {
		return err
	}
	fmt.Fprintf(k.out, "created Secret %s/%s: an admin and a reserve token\n", k.secrets.namespace, k.authName)
	return nil
}

// newToken is 256 random bits, base64url: far above auth.MinTokenLength.
func newToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// expandDNS is each template of --dns with {id} replaced by the node's ID:
// a StatefulSet pod's name differs by node
// ({id}.r-ticketd-peers.ns.svc.cluster.local), the Service's does not.
func expandDNS(templates []string, id string) []string {
	out := make([]string, len(templates))
	for i, t := range templates {
		out[i] = strings.ReplaceAll(t, "{id}", id)
	}
	return out
}

// checkDNSTemplates refuses a --dns entry with braces other than {id}.
func checkDNSTemplates(templates []string) error {
	for _, t := range templates {
		if rest := strings.ReplaceAll(t, "{id}", ""); strings.ContainsAny(rest, "{}") {
			return fmt.Errorf("--dns %q: the only placeholder is {id}, the node's ID", t)
		}
	}
	return nil
}

package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/ticketd/ticketd/pki"
)

const tlsUsage = `usage:
  ticketd tls ca create   [--dir DIR] [--key-dir KDIR] [--days N] [--name CN]
      writes DIR/ca.pem (give it to every node and client) and KDIR/ca-key.pem
      (KDIR defaults to DIR; keep the key off the nodes: whoever holds it can
      join the cluster)
  ticketd tls cert create [--dir DIR] --node ID [--dns NAME,...] [--ip ADDR,...] [--days N]
      writes DIR/ID.pem and DIR/ID-key.pem: a node certificate for the Raft port
      and the API, valid for ID, localhost, 127.0.0.1 and ::1 and the names and
      addresses given (every host name and IP other nodes and clients dial)
  ticketd tls cert create [--dir DIR] --client NAME [--days N]
      writes DIR/NAME.pem and DIR/NAME-key.pem: a client certificate for APIs
      that require one (--tls-client-auth)
  ticketd tls init        [--dir DIR] [--ca-key-dir KDIR] --nodes ID,... [--dns N,...] [--ip A,...] [--loopback=false]
      makes what is missing: the CA (as ca create) and a node certificate for
      each ID without one (as cert create --node, the extra names on each);
      what exists is kept, so it can run before every start (compose does)
      --dns takes {id}, the node's ID: --dns '{id}.peers.ns.svc' names each
      node's own host only
  ticketd tls init        --k8s-secret NAME --k8s-ca-secret CANAME [--k8s-auth-secret AUTH]
                          --nodes ID,... [--dns N,...] [--ip A,...] [--renew-before D]
      the same in a Kubernetes pod, with Secrets instead of files (the Helm
      chart's hook Job): CANAME holds ca.pem and ca-key.pem, NAME ca.pem and
      ID.pem and ID-key.pem per node, AUTH the tokens (tokens, admin.token,
      reserve.token), each made if absent. A node certificate is issued again
      when it is missing, names other hosts, is not the CA's, or expires within
      D; nothing else changes, and the CA and tokens are never replaced. Needs
      a Role granting get, create and update on secrets
Files are written 0600 and never overwritten; DIR defaults to the current directory.
`

func tlsCmd(args []string, stdout, stderr io.Writer) error {
	if len(args) >= 1 && args[0] == "init" {
		return tlsInit(args[1:], stdout, stderr)
	}
	if len(args) < 2 {
		fmt.Fprint(stderr, tlsUsage)
		return usageError{"tls: want `ca create` or `cert create`"}
	}
	switch args[0] + " " + args[1] {
	case "ca create":
		return tlsCACreate(args[2:], stdout, stderr)
	case "cert create":
		return tlsCertCreate(args[2:], stdout, stderr)
	}
	fmt.Fprint(stderr, tlsUsage)
	return usageError{fmt.Sprintf("tls: unknown command %q", strings.Join(args[:2], " "))}
}

func tlsCACreate(args []string, stdout, stderr io.Writer) error {
	flags := flag.NewFlagSet("tls ca create", flag.ContinueOnError)
	flags.SetOutput(stderr)
	dir := flags.String("dir", ".", "directory to write ca.pem (and, without --key-dir, ca-key.pem) to")
	keyDir := flags.String("key-dir", "", "directory to write ca-key.pem to (default --dir)")
	days := flags.Int("days", pki.DefaultCADays, "lifetime of the CA in days")
	name := flags.String("name", "ticketd cluster CA", "common name of the CA")
	if err := parseFlagsOnly(flags, args); err != nil {
		return err
	}
	if flags.NArg() > 0 {
		return usageError{fmt.Sprintf("tls ca create takes no arguments, got %q", flags.Args())}
	}
	if *keyDir == "" {
		*keyDir = *dir
	}
	return createCA(stdout, *dir, *keyDir, *name, *days)
}

func createCA(stdout io.Writer, dir, keyDir, name string, days int) error {
	ca, err := pki.NewCA(pki.CAOptions{CommonName: name, Days: days})
	if err != nil {
		return usageError{err.Error()}
	}
	keyPEM, err := ca.KeyPEM()
	if err != nil {
		return err
	}
	certPath, keyPath := filepath.Join(dir, "ca.pem"), filepath.Join(keyDir, "ca-key.pem")
	if err := writeNew(map[string][]byte{certPath: ca.CertPEM(), keyPath: keyPEM}); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s and %s (valid until %s)\n", certPath, keyPath, ca.Cert.NotAfter.UTC().Format("2006-01-02"))
	return nil
}

func tlsInit(args []string, stdout, stderr io.Writer) error {
	flags := flag.NewFlagSet("tls init", flag.ContinueOnError)
	flags.SetOutput(stderr)
	dir := flags.String("dir", ".", "directory of ca.pem and the node certificates")
	keyDir := flags.String("ca-key-dir", "", "directory of ca-key.pem (default --dir)")
	nodes := flags.String("nodes", "", "node IDs, comma-separated: each gets a certificate if it has none")
	dns := flags.String("dns", "", "extra DNS names for the certificates made now, comma-separated")
	ips := flags.String("ip", "", "extra IP addresses for the certificates made now, comma-separated")
	loopback := flags.Bool("loopback", true, "include localhost, 127.0.0.1 and ::1 in the certificates made now")
	k8sSecret := flags.String("k8s-secret", "", "keep the node certificates in this Kubernetes Secret instead of files (in a pod; with --k8s-ca-secret)")
	k8sCASecret := flags.String("k8s-ca-secret", "", "with --k8s-secret: the Secret holding the CA and its key")
	k8sAuthSecret := flags.String("k8s-auth-secret", "", "with --k8s-secret: also make this Secret of an admin and a reserve token if it does not exist")
	k8sSADir := flags.String("k8s-service-account-dir", defaultServiceAccountDir, "with --k8s-secret: where the pod's service-account token, ca.crt and namespace are")
	renewBefore := flags.Duration("renew-before", 0, "with --k8s-secret: issue again each node certificate that expires within this long (0: only missing or wrong ones)")
	if err := parseFlagsOnly(flags, args); err != nil {
		return err
	}
	if flags.NArg() > 0 {
		return usageError{fmt.Sprintf("tls init takes no arguments, got %q", flags.Args())}
	}
	if *keyDir == "" {
		*keyDir = *dir
	}
	ids := splitList(*nodes)
	if len(ids) == 0 {
		return usageError{"tls init: --nodes names no node"}
	}
	if err := checkDNSTemplates(splitList(*dns)); err != nil {
		return usageError{err.Error()}
	}
	set := map[string]bool{}
	flags.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if *k8sSecret != "" || *k8sCASecret != "" {
		return tlsInitK8s(k8sInitFlags{secret: *k8sSecret, caSecret: *k8sCASecret, authSecret: *k8sAuthSecret, saDir: *k8sSADir,
			renewBefore: *renewBefore, ids: ids, dns: splitList(*dns), ips: splitList(*ips), loopback: *loopback, set: set}, stdout)
	}
	for _, name := range []string{"k8s-auth-secret", "renew-before", "k8s-service-account-dir"} {
		if set[name] {
			return usageError{fmt.Sprintf("tls init: --%s works with --k8s-secret", name)}
		}
	}
	caPath, caKeyPath := filepath.Join(*dir, "ca.pem"), filepath.Join(*keyDir, "ca-key.pem")
	if _, err := os.Stat(caPath); errors.Is(err, fs.ErrNotExist) {
		if err := createCA(stdout, *dir, *keyDir, "ticketd cluster CA", pki.DefaultCADays); err != nil {
			return err
		}
	}
	for _, id := range ids {
		if _, err := os.Stat(filepath.Join(*dir, id+".pem")); err == nil {
			continue
		}
		names := strings.Join(expandDNS(splitList(*dns), id), ",")
		err := tlsCertCreate([]string{"--dir", *dir, "--ca", caPath, "--ca-key", caKeyPath, "--node", id, "--dns", names, "--ip", *ips, fmt.Sprintf("--loopback=%v", *loopback)}, stdout, stderr)
		if err != nil {
			return err
		}
	}
	return nil
}

func tlsCertCreate(args []string, stdout, stderr io.Writer) error {
	flags := flag.NewFlagSet("tls cert create", flag.ContinueOnError)
	flags.SetOutput(stderr)
	dir := flags.String("dir", ".", "directory to write the certificate and key to")
	caPath := flags.String("ca", "", "CA certificate (default DIR/ca.pem)")
	caKeyPath := flags.String("ca-key", "", "CA private key (default DIR/ca-key.pem)")
	node := flags.String("node", "", "make a node certificate for this node ID")
	clientName := flags.String("client", "", "make a client certificate with this name")
	dns := flags.String("dns", "", "extra DNS names, comma-separated (node certificates)")
	ips := flags.String("ip", "", "extra IP addresses, comma-separated (node certificates)")
	loopback := flags.Bool("loopback", true, "include localhost, 127.0.0.1 and ::1 (node certificates)")
	days := flags.Int("days", pki.DefaultCertDays, "lifetime of the certificate in days")
	if err := parseFlagsOnly(flags, args); err != nil {
		return err
	}
	if flags.NArg() > 0 {
		return usageError{fmt.Sprintf("tls cert create takes no arguments, got %q", flags.Args())}
	}
	if (*node == "") == (*clientName == "") {
		return usageError{"tls cert create: give exactly one of --node ID or --client NAME"}
	}
	if *caPath == "" {
		*caPath = filepath.Join(*dir, "ca.pem")
	}
	if *caKeyPath == "" {
		*caKeyPath = filepath.Join(*dir, "ca-key.pem")
	}
	caPEM, err := os.ReadFile(*caPath)
	if err != nil {
		return usageError{fmt.Sprintf("--ca: %v (make one with `ticketd tls ca create`)", err)}
	}
	caKeyPEM, err := os.ReadFile(*caKeyPath)
	if err != nil {
		return usageError{fmt.Sprintf("--ca-key: %v", err)}
	}
	ca, err := pki.LoadCA(caPEM, caKeyPEM)
	if err != nil {
		return usageError{err.Error()}
	}
	opts := pki.CertOptions{CommonName: *node, Usage: pki.Node, Days: *days}
	if *clientName != "" {
		if *dns != "" || *ips != "" {
			return usageError{"--dns and --ip are for node certificates"}
		}
		opts = pki.CertOptions{CommonName: *clientName, Usage: pki.Client, Days: *days}
	} else {
		if err := validFileName(*node); err != nil {
			return usageError{"--node: " + err.Error()}
		}
		opts.DNSNames = append(opts.DNSNames, *node)
		if *loopback {
			opts.DNSNames = append(opts.DNSNames, "localhost")
			opts.IPs = append(opts.IPs, net.IPv4(127, 0, 0, 1), net.IPv6loopback)
		}
		opts.DNSNames = append(opts.DNSNames, splitList(*dns)...)
		for _, s := range splitList(*ips) {
			ip := net.ParseIP(s)
			if ip == nil {
				return usageError{fmt.Sprintf("--ip: %q is not an IP address", s)}
			}
			opts.IPs = append(opts.IPs, ip)
		}
	}
	if err := validFileName(opts.CommonName); err != nil {
		return usageError{err.Error()}
	}
	certPEM, keyPEM, err := ca.Issue(opts)
	if err != nil {
		return usageError{err.Error()}
	}
	certPath := filepath.Join(*dir, opts.CommonName+".pem")
	keyPath := filepath.Join(*dir, opts.CommonName+"-key.pem")
	if err := writeNew(map[string][]byte{certPath: certPEM, keyPath: keyPEM}); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s and %s\n", certPath, keyPath)
	return nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// validFileName refuses names that would write outside the directory.
func validFileName(name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, `/\`) {
		return fmt.Errorf("%q cannot name a file", name)
	}
	return nil
}

// writeNew writes every file 0600, refusing to overwrite any that exists
// (a CA key overwritten by mistake cannot be recovered). Nothing is
// written unless every file is new.
func writeNew(files map[string][]byte) error {
	for path := range files {
		if _, err := os.Lstat(path); err == nil {
			return fmt.Errorf("%s exists; not overwriting it (move it away first)", path)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	for path, b := range files {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return err
		}
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return err
		}
		if _, err := f.Write(b); err != nil {
			_ = f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	return nil
}

// parseFlagsOnly parses the command line alone: the tls commands ignore
// TICKETD_* variables, since a node's environment (TICKETD_CA, ...) means
// other files than these one-off commands write.
func parseFlagsOnly(flags *flag.FlagSet, args []string) error {
	if err := flags.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err.Error()}
	}
	return nil
}

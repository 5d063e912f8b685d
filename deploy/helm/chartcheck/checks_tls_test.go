package chartcheck

import (
	"fmt"
	"slices"
	"strings"
	"time"

	certmanagerv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	corev1 "k8s.io/api/core/v1"
)

// checkCertManager: tls.mode=certManager (DESIGN.md 3.7). One Certificate
// per possible ordinal naming only its own pod, issued by the release's own
// CA unless issuerRef names another, and projected into the server pods
// under exactly the file names the flags use.
func checkCertManager(c *rc, p *problems) {
	certs, issuers := c.r.OfKind("Certificate"), c.r.OfKind("Issuer")
	if !c.on("tls.enabled") || c.str("tls.mode") != "certManager" {
		if len(certs)+len(issuers) != 0 {
			p.add("cert-manager objects rendered while tls.mode is %q", c.str("tls.mode"))
		}
		return
	}
	own := c.str("tls.certManager.issuerRef.name") == ""
	want := cmmeta.IssuerReference{Name: "r-ticketd-ca", Kind: "Issuer", Group: "cert-manager.io"}
	if own {
		checkOwnCA(c, p)
	} else {
		want = cmmeta.IssuerReference{Name: c.str("tls.certManager.issuerRef.name"), Kind: c.str("tls.certManager.issuerRef.kind"), Group: "cert-manager.io"}
		if want.Kind == "" {
			want.Kind = "Issuer"
		}
		if len(issuers) != 0 || len(certs) != int(c.num("tls.maxOrdinals")) {
			p.add("with issuerRef %s the chart makes no CA of its own; got %d Issuers and %d Certificates", want.Name, len(issuers), len(certs))
		}
	}
	duration, _ := time.ParseDuration(c.str("tls.certManager.duration"))
	renew, _ := time.ParseDuration(c.str("tls.certManager.renewBefore"))
	secrets := map[string]int{}
	for i := 0; i < int(c.num("tls.maxOrdinals")); i++ {
		pod := fmt.Sprintf("r-ticketd-%d", i)
		o, err := c.r.Find("Certificate", pod)
		if err != nil {
			p.add("%v", err)
			continue
		}
		s := o.Obj.(*certmanagerv1.Certificate).Spec
		secrets[s.SecretName] = i
		if s.SecretName != fmt.Sprintf("r-ticketd-tls-%d", i) {
			p.add("Certificate %s into Secret %q, want r-ticketd-tls-%d", pod, s.SecretName, i)
		}
		if s.IssuerRef != want {
			p.add("Certificate %s issued by %+v, want %+v", pod, s.IssuerRef, want)
		}
		for _, name := range []string{pod + "." + peers + "." + ns + ".svc.cluster.local", "r-ticketd." + ns + ".svc", "r-ticketd." + ns + ".svc.cluster.local"} {
			if !slices.Contains(s.DNSNames, name) {
				p.add("Certificate %s lacks %s: peers, the ServiceMonitor and clients dial it", pod, name)
			}
		}
		for _, name := range s.DNSNames {
			if strings.HasPrefix(name, "r-ticketd-") && name != pod && !strings.HasPrefix(name, pod+".") {
				p.add("Certificate %s names %s: each certificate must name only its own pod (F18)", pod, name)
			}
		}
		if !slices.Contains(s.Usages, certmanagerv1.UsageServerAuth) || !slices.Contains(s.Usages, certmanagerv1.UsageClientAuth) {
			p.add("Certificate %s usages %v: Raft is mutual TLS, so both server auth and client auth", pod, s.Usages)
		}
		if s.Duration == nil || s.Duration.Duration != duration || s.RenewBefore == nil || s.RenewBefore.Duration != renew {
			p.add("Certificate %s duration %v renewBefore %v, not what tls.certManager says", pod, s.Duration, s.RenewBefore)
		}
		if s.IsCA {
			p.add("Certificate %s is a CA", pod)
		}
	}
	checkProjectedTLS(c, p, secrets)
}

// checkOwnCA: the self-signed Issuer, the CA Certificate in <fullname>-ca
// and the CA Issuer that signs the nodes'.
func checkOwnCA(c *rc, p *problems) {
	self, err := c.r.Find("Issuer", "r-ticketd-selfsigned")
	if err != nil || self.Obj.(*certmanagerv1.Issuer).Spec.SelfSigned == nil {
		p.add("no self-signed Issuer r-ticketd-selfsigned (%v)", err)
	}
	ca, err := c.r.Find("Certificate", "r-ticketd-ca")
	if err != nil {
		p.add("%v", err)
	} else if s := ca.Obj.(*certmanagerv1.Certificate).Spec; !s.IsCA || s.SecretName != "r-ticketd-ca" || s.IssuerRef.Name != "r-ticketd-selfsigned" {
		p.add("CA Certificate %+v: want isCA, Secret r-ticketd-ca, issued by r-ticketd-selfsigned", s)
	}
	iss, err := c.r.Find("Issuer", "r-ticketd-ca")
	if err != nil {
		p.add("%v", err)
	} else if s := iss.Obj.(*certmanagerv1.Issuer).Spec; s.CA == nil || s.CA.SecretName != "r-ticketd-ca" {
		p.add("Issuer r-ticketd-ca %+v: want a CA issuer of Secret r-ticketd-ca", s)
	}
}

// checkProjectedTLS: the server pods' /tls holds, from the Certificates'
// Secrets, <pod>.pem and <pod>-key.pem for every ordinal and one ca.pem;
// the CA's key Secret is never among them.
func checkProjectedTLS(c *rc, p *problems, secrets map[string]int) {
	s, err := statefulSet(c)
	if err != nil {
		return
	}
	var vol *corev1.Volume
	for i, v := range s.Spec.Template.Spec.Volumes {
		if v.Name == "tls" {
			vol = &s.Spec.Template.Spec.Volumes[i]
		}
	}
	if vol == nil || vol.Projected == nil {
		p.add("server pods: want a projected tls volume of the Certificates' Secrets")
		return
	}
	paths := map[string]string{}
	seen := map[string]bool{}
	for _, src := range vol.Projected.Sources {
		if src.Secret == nil {
			p.add("projected tls volume: a source that is no Secret")
			continue
		}
		i, ok := secrets[src.Secret.Name]
		if !ok {
			p.add("projected tls volume mounts Secret %s, which no node Certificate writes", src.Secret.Name)
			continue
		}
		seen[src.Secret.Name] = true
		pod := fmt.Sprintf("r-ticketd-%d", i)
		for _, it := range src.Secret.Items {
			if prev, dup := paths[it.Path]; dup {
				p.add("projected tls volume: %s comes from %s and from %s", it.Path, prev, src.Secret.Name)
			}
			paths[it.Path] = src.Secret.Name
			want := map[string]string{"tls.crt": pod + ".pem", "tls.key": pod + "-key.pem", "ca.crt": "ca.pem"}[it.Key]
			if it.Path != want {
				p.add("projected tls volume: %s/%s at %q, want %q (the flags read /tls/$(POD_NAME).pem, -key.pem and ca.pem)", src.Secret.Name, it.Key, it.Path, want)
			}
		}
	}
	if len(seen) != len(secrets) {
		p.add("projected tls volume holds %d node Secrets, want %d", len(seen), len(secrets))
	}
	if _, ok := paths["ca.pem"]; !ok {
		p.add("projected tls volume has no ca.pem")
	}
}

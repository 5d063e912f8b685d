package chartcheck

import (
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// pods returns every pod spec the chart renders, by object.
func pods(c *rc) map[string]*corev1.PodSpec {
	out := map[string]*corev1.PodSpec{}
	for _, o := range c.r.Objects {
		switch x := o.Obj.(type) {
		case *appsv1.StatefulSet:
			out[o.Kind()+"/"+o.Name()] = &x.Spec.Template.Spec
		case *batchv1.Job:
			out[o.Kind()+"/"+o.Name()] = &x.Spec.Template.Spec
		case *batchv1.CronJob:
			out[o.Kind()+"/"+o.Name()] = &x.Spec.JobTemplate.Spec.Template.Spec
		case *corev1.Pod:
			out[o.Kind()+"/"+o.Name()] = &x.Spec
		}
	}
	return out
}

// checkPodSpecs: the bar every pod of the chart meets, the server's and
// every hook's and backup's alike (DESIGN.md 3.2).
func checkPodSpecs(c *rc, p *problems) {
	images := map[string]bool{}
	for name, ps := range pods(c) {
		sc := ps.SecurityContext
		switch {
		case sc == nil:
			p.add("%s: no pod securityContext", name)
		case sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot,
			sc.RunAsUser == nil || *sc.RunAsUser != 65532,
			sc.RunAsGroup == nil || *sc.RunAsGroup != 65532,
			sc.FSGroup == nil || *sc.FSGroup != 65532,
			sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault:
			p.add("%s: pod securityContext %+v: want runAsNonRoot, user, group and fsGroup 65532, seccomp RuntimeDefault", name, sc)
		}
		if ps.HostNetwork || ps.HostPID || ps.HostIPC {
			p.add("%s: host namespaces", name)
		}
		if ps.EnableServiceLinks == nil || *ps.EnableServiceLinks {
			p.add("%s: enableServiceLinks must be false: a Service named ticketd would set TICKETD_* flags", name)
		}
		hook := ps.ServiceAccountName == "r-ticketd-hook"
		if ps.AutomountServiceAccountToken == nil || *ps.AutomountServiceAccountToken != hook {
			p.add("%s: automountServiceAccountToken %v: only the init hook talks to the Kubernetes API", name, ps.AutomountServiceAccountToken)
		}
		vols := map[string]corev1.Volume{}
		for _, v := range ps.Volumes {
			vols[v.Name] = v
			if v.HostPath != nil {
				p.add("%s: hostPath volume %s", name, v.Name)
			}
			if v.Secret != nil && (v.Secret.DefaultMode == nil || *v.Secret.DefaultMode != 0o440) {
				p.add("%s: secret volume %s: defaultMode want 0440, readable by group 65532 only (F8)", name, v.Name)
			}
			if v.Projected != nil && (v.Projected.DefaultMode == nil || *v.Projected.DefaultMode != 0o440) {
				p.add("%s: projected volume %s: defaultMode want 0440, readable by group 65532 only (F8)", name, v.Name)
			}
		}
		if strings.HasPrefix(name, "StatefulSet/") {
			s, _ := statefulSet(c)
			for _, t := range s.Spec.VolumeClaimTemplates {
				vols[t.Name] = corev1.Volume{Name: t.Name}
			}
		}
		tmp := false
		for _, ctr := range append(slices.Clone(ps.InitContainers), ps.Containers...) {
			cs := ctr.SecurityContext
			if cs == nil || cs.ReadOnlyRootFilesystem == nil || !*cs.ReadOnlyRootFilesystem ||
				cs.AllowPrivilegeEscalation == nil || *cs.AllowPrivilegeEscalation ||
				cs.Capabilities == nil || !slices.Contains(cs.Capabilities.Drop, "ALL") || len(cs.Capabilities.Add) != 0 ||
				(cs.Privileged != nil && *cs.Privileged) {
				p.add("%s/%s: container securityContext %+v: want readOnlyRootFilesystem, no privilege escalation, capabilities drop ALL", name, ctr.Name, cs)
			}
			images[ctr.Image] = true
			img := ctr.Image
			if !strings.Contains(img, "@sha256:") {
				i := strings.LastIndex(img, ":")
				if i < 0 || strings.Contains(img[i:], "/") || img[i+1:] == "latest" || img[i+1:] == "" {
					p.add("%s/%s: image %q: want a pinned tag or digest, never latest", name, ctr.Name, img)
				}
			}
			req, lim := ctr.Resources.Requests, ctr.Resources.Limits
			if req.Cpu().IsZero() || req.Memory().IsZero() || lim.Memory().IsZero() {
				p.add("%s/%s: resources %+v: want cpu and memory requests and a memory limit", name, ctr.Name, ctr.Resources)
			}
			if !lim.Cpu().IsZero() {
				p.add("%s/%s: a CPU limit: CFS throttling delays heartbeats past the election timeout", name, ctr.Name)
			}
			for _, m := range ctr.VolumeMounts {
				if m.SubPath != "" || m.SubPathExpr != "" {
					p.add("%s/%s: mount %s uses subPath: the kubelet never updates it, so certificates would not rotate (F15)", name, ctr.Name, m.Name)
				}
				v, ok := vols[m.Name]
				if !ok {
					p.add("%s/%s: mount %s has no volume", name, ctr.Name, m.Name)
				}
				if (v.Secret != nil || v.Projected != nil) && !m.ReadOnly {
					p.add("%s/%s: secret mount %s is not readOnly", name, ctr.Name, m.Name)
				}
				if m.MountPath == "/tmp" && v.EmptyDir != nil {
					tmp = true
				}
			}
		}
		if !tmp {
			p.add("%s: no emptyDir at /tmp: the root filesystem is read-only", name)
		}
	}
	if len(images) != 1 {
		p.add("images %v: every pod, hook and backup must run the same binary", images)
	}
}

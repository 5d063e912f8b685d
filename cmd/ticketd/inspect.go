package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"github.com/ticketd/ticketd/api"
)

func getJSON(ctx context.Context, co *clientOpts, path string, out any) error {
	data, err := adminCall(ctx, co, http.MethodGet, path, nil)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, out)
}

func inspectCmd(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("inspect", flag.ContinueOnError)
	fs.SetOutput(stderr)
	co := clientFlags(fs)
	ns := fs.String("namespace", "", "decode ID as a Snowflake ID of this namespace")
	seq := fs.String("sequence", "", "locate ID among this sequence's blocks")
	pos, err := flagsAnywhere(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 || (*ns == "") == (*seq == "") {
		return usageError{"usage: ticketd inspect (--namespace NS | --sequence SEQ) ID"}
	}
	id, err := strconv.ParseInt(pos[0], 10, 64)
	if err != nil || id < 1 {
		return usageError{fmt.Sprintf("ID must be a positive 64-bit integer, got %q", pos[0])}
	}
	ctx, cancel := context.WithTimeout(context.Background(), *co.timeout)
	defer cancel()
	if *ns != "" {
		var out api.SnowflakeInspection
		if err := getJSON(ctx, co, "/v1/inspect/snowflake/"+url.PathEscape(*ns)+"/"+pos[0], &out); err != nil {
			return err
		}
		fmt.Fprintln(stderr, snowflakeSummary(out))
		return printJSON(stdout, out)
	}
	var out api.RangeInspection
	if err := getJSON(ctx, co, "/v1/inspect/sequence/"+url.PathEscape(*seq)+"/"+pos[0], &out); err != nil {
		return err
	}
	return printJSON(stdout, out)
}

// snowflakeSummary says in words what an inspected Snowflake ID is made of:
// "shard 17" for a namespace of worker role shard, "worker 17" otherwise.
func snowflakeSummary(in api.SnowflakeInspection) string {
	what := fmt.Sprintf("worker %d", in.WorkerID)
	if in.Shard != nil {
		what = fmt.Sprintf("shard %d", *in.Shard)
	}
	s := fmt.Sprintf("%s %d: %s, sequence %d, at %s", in.Namespace, in.ID, what, in.Sequence, in.Time)
	if in.Found {
		s += ", lease held by " + strconv.Quote(in.Holder)
	}
	return s
}

func auditCmd(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("audit", flag.ContinueOnError)
	fs.SetOutput(stderr)
	co := clientFlags(fs)
	list := fs.Bool("list", false, "print the audit records instead of checking them")
	after := fs.Uint64("after-seq", 0, "with --list: records numbered above this (the \"seq\" of the last record seen)")
	limit := fs.Int("limit", 1000, "with --list: at most this many records")
	outFlag := outputFlag(fs)
	if _, err := flagsAnywhere(fs, args); err != nil {
		return err
	}
	// The check prints JSON only: its verdict is the exit code.
	format, err := output(*outFlag, outputTable)
	if err != nil {
		return err
	}
	if !*list && *outFlag == outputTable {
		return usageError{"-o table: only `ticketd audit --list` prints a table; the check prints JSON"}
	}
	ctx, cancel := context.WithTimeout(context.Background(), *co.timeout)
	defer cancel()
	if *list {
		var out api.AuditList
		if err := getJSON(ctx, co, fmt.Sprintf("/v1/audit?after_seq=%d&limit=%d", *after, *limit), &out); err != nil {
			return err
		}
		if format == outputTable {
			return writeAuditTable(stdout, out, *limit)
		}
		return printJSON(stdout, out)
	}
	var out api.AuditCheck
	if err := getJSON(ctx, co, "/v1/audit/check", &out); err != nil {
		return err
	}
	if err := printJSON(stdout, out); err != nil {
		return err
	}
	if len(out.Violations) > 0 {
		return fmt.Errorf("the uniqueness probe found %d violations", len(out.Violations))
	}
	return nil
}

func namespacesCmd(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("namespaces", flag.ContinueOnError)
	fs.SetOutput(stderr)
	co := clientFlags(fs)
	create := fs.Bool("create", false, "create the named namespace (defaults: 41/10/12 bits from 2020-01-01, 30 s leases)")
	preset := fs.String("preset", "", `with --create: a layout preset; "instagram": shard-embedding IDs, 40 bits of ms, 13 of shard, 10 of sequence (lease a shard with worker_id)`)
	horizon := fs.Int64("horizon-years", 0, "with --create: how long the namespace is meant to last (default 30); a layout that runs out sooner is created with a warning")
	leases := fs.Bool("leases", false, "list the namespace's worker-id leases")
	outFlag := outputFlag(fs)
	pos, err := flagsAnywhere(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 1 || ((*create || *leases) && len(pos) != 1) || (!*create && (*preset != "" || *horizon != 0)) {
		return usageError{"usage: ticketd namespaces [NS] [--create [--preset instagram] [--horizon-years N] | --leases [-o table|json]]"}
	}
	// Only the leases are a table; the namespaces themselves print JSON.
	format, err := output(*outFlag, outputTable)
	if err != nil {
		return err
	}
	if !*leases && *outFlag == outputTable {
		return usageError{"-o table: only `ticketd namespaces NS --leases` prints a table; namespaces print JSON"}
	}
	ctx, cancel := context.WithTimeout(context.Background(), *co.timeout)
	defer cancel()
	switch {
	case *create:
		var body []byte
		if *preset != "" || *horizon != 0 {
			req := api.NamespaceRequest{Preset: *preset}
			if *horizon != 0 {
				req.HorizonYears = horizon
			}
			body, _ = json.Marshal(req)
		}
		data, err := adminCall(ctx, co, http.MethodPut, "/v1/namespaces/"+url.PathEscape(pos[0]), body)
		if err != nil {
			return err
		}
		var out api.NamespaceCreated
		if json.Unmarshal(data, &out) == nil {
			for _, w := range out.Warnings {
				fmt.Fprintln(stderr, "warning: "+w)
			}
		}
		_, err = stdout.Write(data)
		return err
	case *leases:
		var out api.LeaseList
		if err := getJSON(ctx, co, "/v1/namespaces/"+url.PathEscape(pos[0])+"/leases", &out); err != nil {
			return withHint(err, namespaceHint(pos[0]))
		}
		if format == outputTable {
			return writeLeasesTable(stdout, out)
		}
		return printJSON(stdout, out)
	case len(pos) == 1:
		var out api.Namespace
		if err := getJSON(ctx, co, "/v1/namespaces/"+url.PathEscape(pos[0]), &out); err != nil {
			return err
		}
		return printJSON(stdout, out)
	}
	var out api.NamespaceList
	if err := getJSON(ctx, co, "/v1/namespaces", &out); err != nil {
		return err
	}
	return printJSON(stdout, out)
}

// capacity is what `ticketd status` adds to the cluster view.
type capacity struct {
	Sequences []sequenceCapacity  `json:"sequences"`
	Namesp    []namespaceCapacity `json:"namespaces"`
}

type sequenceCapacity struct {
	Name         string  `json:"name"`
	Remaining    int64   `json:"remaining"`
	FractionLeft float64 `json:"fraction_left"`
}

type namespaceCapacity struct {
	Name      string  `json:"name"`
	YearsLeft float64 `json:"years_left"`
}

func fetchCapacity(ctx context.Context, co *clientOpts) (capacity, error) {
	c := capacity{Sequences: []sequenceCapacity{}, Namesp: []namespaceCapacity{}}
	// Every page of sequences, in order of names.
	for after := ""; ; {
		var seqs api.SequenceList
		path := fmt.Sprintf("/v1/sequences?limit=%d", api.MaxSequencePage)
		if after != "" {
			path += "&after=" + url.QueryEscape(after)
		}
		if err := getJSON(ctx, co, path, &seqs); err != nil {
			return c, err
		}
		for _, s := range seqs.Sequences {
			span := float64(uint64(s.Max-s.Start) + 1)
			c.Sequences = append(c.Sequences, sequenceCapacity{Name: s.Name, Remaining: s.Remaining, FractionLeft: float64(s.Remaining) / span})
		}
		if seqs.Next == "" {
			break
		}
		if seqs.Next <= after {
			return c, fmt.Errorf("listing sequences: the server's cursor does not advance: next %q after %q", seqs.Next, after)
		}
		after = seqs.Next
	}
	var ns api.NamespaceList
	if err := getJSON(ctx, co, "/v1/namespaces", &ns); err != nil {
		return c, err
	}
	for _, n := range ns.Namespaces {
		c.Namesp = append(c.Namesp, namespaceCapacity{Name: n.Name, YearsLeft: n.YearsLeft})
	}
	return c, nil
}

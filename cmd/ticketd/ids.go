package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/client"
)

// idsCmd prints Snowflake IDs of a namespace, one a line, made by a node's
// own generator (POST /v1/namespaces/{name}/ids): any node answers, so the
// first node of --addr that can serve does, and one that cannot now (503:
// its clock is behind, it holds no lease) passes the request to the next.
// The SDK's call for this route is its remote generator, which prefetches;
// a command line wants exactly the IDs it prints, so it asks the route
// itself, through adminCall.
func idsCmd(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("ids", flag.ContinueOnError)
	fs.SetOutput(stderr)
	co := clientFlags(fs)
	n := fs.Int64("n", 1, fmt.Sprintf("how many IDs, 1 to %d", api.MaxSnowflakeIDs))
	format := new(string)
	const help = "output format: json prints the node's whole answer (namespace, node, worker_id, ids, ids_text); default one ID a line"
	fs.StringVar(format, "o", "", help)
	fs.StringVar(format, "output", "", "same as -o")
	pos, err := flagsAnywhere(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError{"usage: ticketd ids NS [-n N] [-o json]"}
	}
	ns := pos[0]
	if *n < 1 || *n > api.MaxSnowflakeIDs {
		return usageError{fmt.Sprintf("-n must be between 1 and %d, got %d", api.MaxSnowflakeIDs, *n)}
	}
	switch *format {
	case "", outputJSON:
	default:
		return usageError{fmt.Sprintf("-o %q: want %s (without -o: one ID a line)", *format, outputJSON)}
	}
	body, err := json.Marshal(api.SnowflakeIDsRequest{Count: n})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), *co.timeout)
	defer cancel()
	data, err := adminCall(ctx, co, http.MethodPost, "/v1/namespaces/"+url.PathEscape(ns)+"/ids", body)
	if err != nil {
		return withHint(err, idsHint(ns))
	}
	var res api.SnowflakeIDs
	if err := json.Unmarshal(data, &res); err != nil {
		return fmt.Errorf("the node's answer is not a list of IDs: %v", err)
	}
	// Nothing is printed of an answer that is not what was asked: a script
	// reading lines must not take a short or unordered list for the IDs.
	if int64(len(res.IDs)) != *n {
		return fmt.Errorf("node %s answered %d IDs of %q, %d were asked for", res.Node, len(res.IDs), ns, *n)
	}
	for i := 1; i < len(res.IDs); i++ {
		if res.IDs[i] <= res.IDs[i-1] {
			return fmt.Errorf("node %s answered IDs of %q out of order: %d after %d", res.Node, ns, res.IDs[i], res.IDs[i-1])
		}
	}
	if *format == outputJSON {
		return printJSON(stdout, res)
	}
	w := bufio.NewWriter(stdout)
	var line []byte
	for _, id := range res.IDs {
		line = strconv.AppendInt(line[:0], id, 10)
		line = append(line, '\n')
		if _, err := w.Write(line); err != nil {
			return err
		}
	}
	return w.Flush()
}

// idsHint says what to do about a node's refusal to make IDs of ns.
func idsHint(ns string) func(*client.APIError) string {
	return func(e *client.APIError) string {
		switch e.Problem.Type {
		case api.ProblemNamespaceNotFound:
			return "create it with `ticketd namespaces " + ns + " --create` (admin token), or list them with `ticketd namespaces`"
		case api.ProblemClockBehind:
			return "that node's clock is behind IDs it made before: give --addr another node, or retry after the wait it names"
		case api.ProblemWorkersExhausted:
			return "every worker id of " + ns + " is held or resting: `ticketd namespaces " + ns + " --leases` shows the holders"
		case api.ProblemNoWorkerLease:
			return "that node holds no valid lease in " + ns + " now (cut off from the quorum, or taking a new one): give --addr another node"
		case api.ProblemTimestampExhausted:
			return "the namespace's layout has run out of time: create a new namespace and move its clients"
		}
		return ""
	}
}

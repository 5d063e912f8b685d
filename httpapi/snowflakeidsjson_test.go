package httpapi

import (
	"encoding/json"
	"math"
	"strconv"
	"testing"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/domain"
)

// TestSnowflakeIDsJSON_SameAsEncodingJSON: the /ids answer's hand-written
// encoder writes what a json.Encoder writes of api.SnowflakeIDs, with and
// without the lease's grant_seq (issue 47; omitted when 0).
func TestSnowflakeIDsJSON_SameAsEncodingJSON(t *testing.T) {
	for _, out := range []domain.SnowflakeIDs{
		{Namespace: "orders", Node: "n1", WorkerID: 3, IDs: []int64{1}},
		{Namespace: "orders", Node: "n1", WorkerID: 3, LeaseGrantSeq: 42, IDs: []int64{7, 8, 9}},
		{Namespace: "a.b-c_d", Node: "node-2", WorkerID: -1, LeaseGrantSeq: math.MaxUint64, IDs: []int64{math.MaxInt64}},
	} {
		text := make([]string, len(out.IDs))
		for i, id := range out.IDs {
			text[i] = strconv.FormatInt(id, 10)
		}
		want, err := json.Marshal(api.SnowflakeIDs{Namespace: out.Namespace, Node: out.Node, WorkerID: out.WorkerID,
			LeaseGrantSeq: out.LeaseGrantSeq, IDs: out.IDs, IDsText: text})
		if err != nil {
			t.Fatal(err)
		}
		if got := string(appendSnowflakeIDsJSON(nil, out)); got != string(want)+"\n" {
			t.Errorf("%+v:\n got %s\nwant %s", out, got, want)
		}
	}
}

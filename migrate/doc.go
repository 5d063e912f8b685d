// Package migrate moves an ID generator to ticketd: it reads the highest ID
// a legacy generator has handed out (a PostgreSQL sequence, max() of a
// column, a MySQL/MariaDB AUTO_INCREMENT, or a plain number) and creates a
// ticketd sequence above it, or raises an existing one, by a margin.
//
// # The promise, and what the margin is for
//
// After Run returns (not a dry run), every ID the ticketd sequence hands
// out is above Target = source's highest ID + margin. The legacy generator
// may keep running while teams switch over; the IDs it hands out after the
// source was read are safe from collision exactly as long as they stay at
// or below Target, so the margin must cover every ID it hands out until it
// stops — or the migration is run again (repeatedly, e.g. from cron)
// during the transition: each run lifts the target with the source.
//
// # Why it is safe to run again
//
// A new sequence is created with start = Target+1, so no raise is needed;
// an existing one is raised with RaiseSequence, which never lowers a mark
// and is a no-op when the mark is already at or above Target. A second run
// over an unchanged source therefore changes nothing. Apply always asks the
// server to raise (it does not trust its own earlier reading of the
// sequence): the server's raise also cuts IDs a leader holds in memory,
// which a reading of the sequence's next ID cannot see.
//
// # Reading the sources correctly
//
//   - PostgreSQL sequence: last_value is the highest value handed out when
//     is_called is true; when false (a fresh sequence, or setval(s, n,
//     false)) nothing at or above last_value was handed out, so the highest
//     is last_value-1. Values sessions have cached (CACHE > 1) are already
//     counted in last_value. Descending sequences are refused.
//   - MySQL/MariaDB AUTO_INCREMENT is the NEXT value, so the highest is
//     AUTO_INCREMENT-1. MySQL 8 answers information_schema.TABLES and SHOW
//     TABLE STATUS from cached statistics (information_schema_stats_expiry,
//     a day by default); the reader sets it to 0 for its session so the
//     counter comes from the engine. MariaDB has no such cache and no such
//     variable (its error 1193 is ignored). As a second guard the reader
//     also takes max() of the AUTO_INCREMENT column and uses the larger.
//     The counter also counts rows of transactions not yet committed,
//     which max() cannot see: prefer it to --column where there is one.
//   - max(column): only committed rows are seen; rows being inserted
//     while it reads are covered by the margin like any later legacy ID.
//     Only integer columns are accepted.
package migrate

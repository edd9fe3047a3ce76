// Package datasets reads and writes tegrl's datasets as Arrow IPC files:
// transitions (one row per scheduling decision: observation tensors,
// action, reward, behaviour policy), jobs (a workload), machines (a
// cluster) and usage series (machine utilisation over time). The column
// layouts are documented in docs/datasets.md.
//
// Every file carries in its schema metadata its kind ("tegrl.kind"), the
// format version, the observation schema hash (env.ObservationSchemaHash)
// and a checksum scheme; every record batch carries a CRC-32C of its
// content. Readers check all of it, and every row's values, before they
// return anything: a file that is truncated, corrupted, of another kind or
// version, or written for another observation layout is refused with an
// error naming the file, and for a bad value its batch, row and column.
//
// Writers and readers stream: a writer flushes a record batch every
// WriterOptions.BatchRows rows (or BatchBytes bytes), and a reader holds
// one batch at a time, so a file of any size needs the memory of one batch.
//
// The converters turn the Alibaba cluster traces into datasets with env's
// loaders (ConvertAlibabaGPU, ConvertAlibaba2018), and Record runs a
// simulation under any env.Scheduler, writing one transition per decision.
package datasets

// The fast path of reads and one-key writes: what is here exists for speed alone, and a change to
// any of it comes with the instruction counts before and after.
//
// - `HashedName`: a key's name hashed once, so the table of keys is searched by an integer
//   (`defaults-profile read-int`, `stored-value`).
// - `CacheEntry`, `Box`, `AnyBox`: a key's decoded value kept beside its JSON, so a read decodes
//   nothing (`read-int`, `Benchmarks/ratios` ReadInt and ReadCodable).
// - `InPlaceWriter`: a write of a lossless value with no references goes into the box the key keeps,
//   its JSON made only when the values are read (`write-0`, `write-file`, ratios WriteInt); a key
//   whose one observer takes values of its type as bytes (`ObserverSlot.valueType`, set by
//   `Defaults.observe` for such types) is written so too, again with room for the old value, and
//   the observer told with both (`write-1`, ratios "WriteInt/Defaults.inMemory 1 observer").
// - `NameSieve`: which names the values may hold, so a key declaring a migration the store records
//   learns that its former names hold nothing without hashing them (`open100-migrated`, ratios
//   "Migrations/open a suite and declare 100 keys").
//
// Measure with `valgrind --tool=callgrind --toggle-collect='*measured*'
// Benchmarks/.build/release/defaults-profile <scenario> 20000` (see "Profiling" in
// `Benchmarks/README.md`); the table of counts there says what each step bought.

// The other process of the cross-process benchmarks (CrossProcessBenchmarks.swift): it writes the
// shared settings file through the library, as a second program would.
//
//   defaults-bench-peer latency <file>
//       reads one integer a line from standard input; for each, stores it under "stamp",
//       synchronizes, and prints "<integer> <called> <returned>": CLOCK_MONOTONIC nanoseconds just
//       before the write and just after synchronize() returned.
//   defaults-bench-peer write-keys <file> <prefix> <count>
//       opens the file and prints "ready"; on a line "go" on standard input, writes <count>
//       distinct keys "<prefix>-<i>" as a burst, synchronizes, and prints "done".
import Defaults
import Foundation

#if canImport(Glibc)
import Glibc
#endif

func monotonicNanoseconds() -> Int {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return now.tv_sec * 1_000_000_000 + now.tv_nsec
}

let arguments = CommandLine.arguments
guard arguments.count >= 3 else {
    FileHandle.standardError.write(Data("usage: defaults-bench-peer latency|write-keys <file> …\n".utf8))
    exit(2)
}
let suite = Defaults.Suite(fileURL: URL(fileURLWithPath: arguments[2]))

switch arguments[1] {
case "latency":
    let stamp = Defaults.Key<Int>("stamp", default: 0, suite: suite)
    while let line = readLine(), let value = Int(line) {
        let called = monotonicNanoseconds()
        suite[stamp] = value
        try suite.synchronize()
        let returned = monotonicNanoseconds()
        print("\(value) \(called) \(returned)")
        fflush(nil)
    }
case "write-keys":
    guard arguments.count == 5, let count = Int(arguments[4]) else { exit(2) }
    let keys = (0..<count).map { Defaults.Key<Int>("\(arguments[3])-\($0)", default: -1, suite: suite) }
    print("ready")
    fflush(nil)
    guard readLine() == "go" else { exit(2) }
    for (index, key) in keys.enumerated() { suite[key] = index }
    try suite.synchronize()
    print("done")
    fflush(nil)
default:
    exit(2)
}

// The other process of the cross-process benchmarks (CrossProcessBenchmarks.swift): it writes the
// shared settings file through the library, as a second program would.
//
//   defaults-bench-peer latency <file>
//       reads one integer a line from standard input; for each, stores it under "stamp",
//       synchronizes, and prints "<integer> <called> <returned>": CLOCK_MONOTONIC nanoseconds just
//       before the write and just after synchronize() returned.
//   defaults-bench-peer configmap <volume>
//       updates <volume> as kubelet updates a ConfigMap volume, once per integer read from standard
//       input: a new timestamped directory holding settings.json (100 keys, "stamp" the integer),
//       `..data_tmp` pointing at it renamed over `..data`, the old directory deleted. Prints
//       "<integer> <called> <returned>": CLOCK_MONOTONIC nanoseconds just before the rename and
//       just after the old directory is gone. Lays the volume out first, with "stamp" 0.
//   defaults-bench-peer write-keys <file> <prefix> <count>
//       opens the file and prints "ready"; on a line "go" on standard input, writes <count>
//       distinct keys "<prefix>-<i>" as a burst, synchronizes, and prints "done".
//   defaults-bench-peer etcd-write-keys <endpoint> <prefix> <name> <count> <batch>
//       opens a suite in etcd under <prefix> and prints "ready"; on "go", writes <count> distinct
//       keys "<name>-<i>", synchronizing after every <batch> of them, and prints "done".
import Defaults
import DefaultsEtcd
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
    FileHandle.standardError.write(Data("usage: defaults-bench-peer latency|configmap|write-keys <file> …\n".utf8))
    exit(2)
}
/// kubelet's update of the ConfigMap volume at `volume` to settings whose "stamp" is `stamp`;
/// returns the times just before its one atomic step (the rename of `..data`) and at its end.
func publish(stamp: Int, in volume: String) -> (called: Int, returned: Int) {
    var text = "{\n"
    for index in 0..<99 { text += "  \"setting-\(index)\" : \"value \(index)\",\n" }
    text += "  \"stamp\" : \(stamp)\n}\n"
    let name = "..2026_11_24_10_00_00.\(stamp)"
    let directory = volume + "/" + name
    mkdir(directory, 0o755)
    _ = FileManager.default.createFile(atPath: directory + "/settings.json", contents: Data(text.utf8))
    let previous = try? FileManager.default.destinationOfSymbolicLink(atPath: volume + "/..data")
    symlink(name, volume + "/..data_tmp")
    let called = monotonicNanoseconds()
    rename(volume + "/..data_tmp", volume + "/..data")
    if let previous { try? FileManager.default.removeItem(atPath: volume + "/" + previous) }
    let returned = monotonicNanoseconds()
    if stamp == 0 { symlink("..data/settings.json", volume + "/settings.json") }
    return (called, returned)
}

if arguments[1] == "configmap" {
    _ = publish(stamp: 0, in: arguments[2])
    print("ready")
    fflush(nil)
    while let line = readLine(), let value = Int(line) {
        let (called, returned) = publish(stamp: value, in: arguments[2])
        print("\(value) \(called) \(returned)")
        fflush(nil)
    }
    exit(0)
}

if arguments[1] == "etcd-write-keys" {
    guard arguments.count == 7, let endpoint = URL(string: arguments[2]), let count = Int(arguments[5]),
        let batch = Int(arguments[6])
    else { exit(2) }
    let suite = Defaults.Suite(etcd: [endpoint], prefix: arguments[3], cache: .none)
    let keys = (0..<count).map { Defaults.Key<Int>("\(arguments[4])-\($0)", default: -1, suite: suite) }
    print("ready")
    fflush(nil)
    guard readLine() == "go" else { exit(2) }
    for (index, key) in keys.enumerated() {
        suite[key] = index
        if (index + 1) % batch == 0 || index == count - 1 { try suite.synchronize() }
    }
    print("done")
    fflush(nil)
    exit(0)
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

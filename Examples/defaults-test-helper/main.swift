// A second process for the tests in Tests/DefaultsTests; not an example to copy.
//
//     defaults-test-helper write-and-exit <file> <key> <value>
//         writes one value and returns from main without synchronize(): the exit flush must save it.
//     defaults-test-helper full-disk <file> <key> <value>
//         writes under a file-size limit so the flush fails like a full disk, checks that the error is
//         reported and the old file intact, lifts the limit, and checks that synchronize() then succeeds.
import Defaults
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

let arguments = CommandLine.arguments

//     defaults-test-helper corrupt-standard
//         with a corrupt standard file, installs an error handler that itself reads the standard
//         suite, then reads a key: the report must not deadlock the standard suite's creation.
if arguments.count == 2, arguments[1] == "corrupt-standard" {
    let reported = DispatchSemaphore(value: 0)
    Defaults.errorHandler = { error in
        let verbose = Defaults[Defaults.Key<Bool>("verboseErrors", default: true)]
        print("reported (verbose: \(verbose)): \(error)")
        reported.signal()
    }
    print("port: \(Defaults[Defaults.Key<Int>("port", default: 8080)])")
    reported.wait()
    exit(0)
}

guard arguments.count == 5 else {
    FileHandle.standardError.write(Data("usage: defaults-test-helper <command> <file> <key> <value>\n".utf8))
    exit(2)
}
let url = URL(fileURLWithPath: arguments[2])
let key = Defaults.Key<String>(arguments[3], default: "", suite: Defaults.Suite(fileURL: url))

switch arguments[1] {
case "write-and-exit":
    Defaults[key] = arguments[4]
    print("wrote")

case "full-disk":
    let errors = Mutex<[String]>([])
    let suite = Defaults.Suite(fileURL: url) { error in errors.withLock { $0.append(error.description) } }
    let limited = Defaults.Key<String>(arguments[3], default: "", suite: suite)
    let before = try Data(contentsOf: url)
    signal(SIGXFSZ, SIG_IGN)
    var limit = rlimit()
    getrlimit(Int32(RLIMIT_FSIZE.rawValue), &limit)
    let original = limit
    limit.rlim_cur = rlim_t(before.count)
    setrlimit(Int32(RLIMIT_FSIZE.rawValue), &limit)
    Defaults[limited] = arguments[4]
    do {
        try suite.synchronize()
        print("synchronize unexpectedly succeeded under the limit")
    } catch {
        print("synchronize failed: \(error)")
    }
    print("reported: \(errors.withLock { $0.count > 0 })")
    print("file intact: \(try Data(contentsOf: url) == before)")
    print("value in memory: \(Defaults[limited])")
    var restored = original
    setrlimit(Int32(RLIMIT_FSIZE.rawValue), &restored)
    try suite.synchronize()
    print("after lifting the limit: \(try String(contentsOf: url, encoding: .utf8).contains(arguments[4]))")

default:
    FileHandle.standardError.write(Data("unknown command \(arguments[1])\n".utf8))
    exit(2)
}

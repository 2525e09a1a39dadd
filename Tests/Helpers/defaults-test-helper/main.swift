// Other processes for the tests in Tests/; not an example to copy.
//
//     defaults-test-helper write-and-exit <file> <key> <value>
//         writes one value and returns from main without synchronize(): the exit flush must save it.
//     defaults-test-helper full-disk <file> <key> <value>
//         writes under a file-size limit so the flush fails like a full disk, checks that the error is
//         reported and the old file intact, lifts the limit, and checks that synchronize() then succeeds.
//     defaults-test-helper corrupt-standard
//         with a corrupt standard file, installs an error handler that itself reads the standard
//         suite, then reads a key: the report must not deadlock the standard suite's creation.
//     defaults-test-helper write <file> <key> <int>...
//         writes each value in turn to the Int key, synchronizing after each; prints "written".
//     defaults-test-helper write-keys <file> <prefix> <count>
//         writes <count> distinct keys "<prefix>-<i>" = i as a burst, then synchronizes.
//     defaults-test-helper increment <file> <key> <count>
//         adds one to the Int key <count> times, each in an exclusive (cross-process) transaction.
//     defaults-test-helper write-forever <file> <key> <bytes> <first>
//         writes ever-new values of about <bytes> bytes to the key, numbered from <first> on,
//         synchronizing after each, and prints "synced <n>" once value n is on disk; runs until killed.
//     defaults-test-helper pending-wins <file>
//         makes every write of the file fail (a file-size limit, like a full disk), writes
//         "shared" = 2 so it stays pending, prints "pending", waits for one external change event
//         and prints "external <keys> shared=<value>", then lifts the limit, synchronizes and prints
//         "synchronized".
//     defaults-test-helper exclusive-full-disk <file>
//         with the file holding "n", adds one to it in an exclusive transaction while every write
//         fails; prints "threw", "in memory <n>", then lifts the limit, synchronizes and prints
//         "synchronized".
//     defaults-test-helper broken-full-disk <file> <broken text>
//         opens the file, writes "c" = 3, replaces the file's text with <broken text>, and
//         synchronizes while every write fails ("failed" or "succeeded"); then lifts the limit and
//         synchronizes again ("synchronized").
//     defaults-test-helper userdefaults-edit <path>
//         Foundation's UserDefaults over <path>.plist, for the README's baseline: sets "size" to 1,
//         lets another writer change the file to 2, and prints what it reads before and after its
//         own synchronize(), and how many change notifications it got.
//     defaults-test-helper release-outside-lock <file>
//         with the file holding "p" = {"n": …} (a class value whose deinit reads the suite, writes
//         "r" and synchronizes) and "q", reads "p" so its value is kept, hangs a slot on "q" only,
//         prints "ready", then waits for an outside change: prints "released" when the old "p" is
//         released (a release under the suite's lock, or under the lock that keeps outside changes
//         in order with commits, would stop the process: the deinit takes them again), then
//         "changed n=<n>", and exits. With no sink that gets every change, so "p"'s change is in no
//         event.
//     defaults-test-helper read-only <file>
//         opens a file this process may read but not write; prints "port <n>" and "source <layer>",
//         then writes "port", removes everything, tries an exclusive transaction ("exclusive threw"
//         or "exclusive ran") and synchronizes ("synchronized"), and prints "port <n>" again. Every
//         reported problem is printed at once as "error <description>".
//     defaults-test-helper follow-read-only <file>
//         opens the file (a link that leads somewhere writable), writes "port" = 1 and synchronizes,
//         prints "ready", then waits for one outside change: prints "changed port=<n>", writes
//         "port" = 2 (refused, once the link leads somewhere read-only) and prints "port <n>".
//     defaults-test-helper pending-then-read-only <link> <target>
//         writes "port" = 5 through the link (a file this process may write), re-points the link at
//         <target> (which it may not write) before the write is flushed, waits for the write to be
//         refused and memory to follow the link, and prints "error <description>" and "port <n>".
//     defaults-test-helper remove-all <file>
//         opens the file, prints "ready", then takes commands from standard input, one a line:
//         "wait <key>" returns once memory holds <key> (written by another process) and prints
//         "seen <key>"; "remove-all" prints "memory had <keys>", calls removeAll() and
//         synchronize(), and prints "removed" ("remove-all in-transaction": removeAll() and a write
//         of "kept" = 4 in one transaction); "keys" prints "memory <keys>". Keys are sorted and
//         joined by commas.
//     defaults-test-helper old-version <file>
//         writes what an old version of a program stores (Migrations.swift) and prints "written".
//     defaults-test-helper new-version <file>
//         opens the file as the new version, whose keys were renamed, changed type, split, merged
//         and retired: prints "applied <ids>" (the suite's migrations this process ran), then what
//         the new keys read; every reported problem as "error <description>".
//     defaults-test-helper rolling <file>
//         opens the file as the new version during a rolling upgrade ("editor.fontSize", formerly
//         "fontSize", not final): prints "editor.fontSize <n>" now and after each change of it.
//     defaults-test-helper publish-schema <file>
//         publishes the new version's schema beside the file, without opening it.
//     defaults-test-helper secret-service <file> [<secret name>]
//         a service starting: opens the file, declares the secret key <name> if given (read from
//         $CREDENTIALS_DIRECTORY; "the default" without a file), prints every report as
//         "error <description>", then "listening on <port>" (the Int key "port", 8080 by
//         default) and, with a secret, "reads the default" or "reads the file".
//         Ends with status 3 if it ever holds more than 2 GiB (a file read that never ends).
//     defaults-test-helper watch <file>
//         opens the file, prints "ready", then one line per change event it is told of
//         ("external <key>=<json>,…" or "local …") and one per reported error ("error <description>"),
//         until it is killed.
import Defaults
import DefaultsLaunchOverrideSamples
import Foundation
import Synchronization

/// Makes every write that grows a file beyond a few bytes fail, as on a full disk, until `lift()`.
struct FileSizeLimit {
    private var original = rlimit()

    init(bytes: Int) {
        signal(SIGXFSZ, SIG_IGN)
        getrlimit(Int32(RLIMIT_FSIZE.rawValue), &original)
        var limited = original
        limited.rlim_cur = rlim_t(bytes)
        setrlimit(Int32(RLIMIT_FSIZE.rawValue), &limited)
    }

    func lift() {
        var restored = original
        setrlimit(Int32(RLIMIT_FSIZE.rawValue), &restored)
    }
}

#if canImport(Glibc)
import Glibc
#endif

/// Prints `line` at once, even when standard output is a pipe.
func say(_ line: String) {
    print(line)
    fflush(nil)
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data((message + "\n").utf8))
    exit(2)
}

let arguments = CommandLine.arguments
guard arguments.count >= 2 else { fail("usage: defaults-test-helper <command> …") }
let command = arguments[1]

//     defaults-test-helper named-twice <name>
//         opens Defaults.Suite(name:) twice (in $XDG_CONFIG_HOME) and the standard suite under the
//         same application id; writes through the first and prints what the others read at once.
if command == "named-twice", arguments.count == 3 {
    let name = arguments[2]
    let first = try Defaults.Suite(name: name)
    let second = try Defaults.Suite(name: name)
    Defaults.Suite.applicationIdentifier = name
    first[Defaults.Key<Int>("shared", default: 0, suite: first)] = 7
    print("second reads \(second[Defaults.Key<Int>("shared", default: 0, suite: second)])")
    print("standard reads \(Defaults[Defaults.Key<Int>("shared", default: 0)])")
    print("equal: \(first == second && second == .standard)")
    exit(0)
}

//     defaults-test-helper layers <name> <key>...
//         opens Defaults.Suite(name:) (in $XDG_CONFIG_HOME, over $XDG_CONFIG_DIRS) and prints, for
//         each Int key (default -1), "<key>=<value> from <source>"; then whether the standard suite
//         under the same application id is the same state ("standard: true").
if command == "layers", arguments.count >= 3 {
    let suite = try Defaults.Suite(name: arguments[2]) { error in say("error \(error)") }
    for name in arguments.dropFirst(3) {
        let key = Defaults.Key<Int>(name, default: -1, suite: suite)
        say("\(name)=\(suite[key]) from \(suite.source(of: key))")
    }
    Defaults.Suite.applicationIdentifier = arguments[2]
    say("standard: \(suite == .standard)")
    exit(0)
}

//     defaults-test-helper userdefaults-standard
//         goes through every `UserDefaults.standard` spelling of the API (the subscript, `suite:` in
//         key initialisers, `reset` and `removeAll`) and through the standard suite, printing what
//         the other spelling reads; then synchronizes, so the test can read the file.
if command == "userdefaults-standard" {
    let standard = UserDefaults.standard
    let count = Defaults.Key<Int>("count", default: 0)
    standard[count] = 7
    print("Defaults reads \(Defaults[count]) written through UserDefaults.standard")
    let text = Defaults.Key<String>("text", default: "none")
    Defaults[text] = "hello"
    print("UserDefaults.standard reads \(standard[text]) written through Defaults")
    let viaUserDefaults = Defaults.Key<Int>("count", default: 0, suite: standard)
    let dynamic = Defaults.Key<Int>("dynamic", suite: standard) { 3 }
    let optional = Defaults.Key<String?>("optional", suite: standard)
    let viaSuite = Defaults.Key<Int>("count", default: 0, suite: .standard)
    print(
        "keys equal: \(viaUserDefaults == count && viaSuite == count && viaUserDefaults.hashValue == count.hashValue)"
    )
    print(
        "suites are the standard suite: \([viaUserDefaults, dynamic, optional, viaSuite].allSatisfy { $0.suite === Defaults.Suite.standard })"
    )
    Defaults[dynamic] = 4
    Defaults[optional] = "set"
    Defaults[Defaults.Key<Int>("gone", default: 0)] = 1
    Defaults.reset("dynamic", suite: standard)
    Defaults.reset(["optional"], suite: standard)
    print(
        "after reset: dynamic \(Defaults[dynamic]), optional \(Defaults[optional] ?? "nil"), count \(Defaults[count])"
    )
    // NB: Foundation's own UserDefaults.standard is not where any of this went.
    print("Foundation's UserDefaults.standard holds count: \(standard.object(forKey: "count") != nil)")
    try Defaults.Suite.standard.synchronize()
    print("synchronized")
    if CommandLine.arguments.count > 2, CommandLine.arguments[2] == "remove-all" {
        Defaults.removeAll(suite: standard)
        try Defaults.Suite.standard.synchronize()
        print("removed all: count \(Defaults[count]), text \(Defaults[text])")
    }
    if CommandLine.arguments.count > 2, CommandLine.arguments[2] == "user-defaults-remove-all" {
        standard.removeAll()
        try Defaults.Suite.standard.synchronize()
        print("removed all: count \(Defaults[count]), text \(Defaults[text])")
    }
    exit(0)
}

//     defaults-test-helper userdefaults-samples <path>
//         opens the `UserDefaults` whose file is <path>.plist (another process wrote it), and for
//         every PropertyListSamples sample prints "<name> value=<read through a suite>
//         plist=<UserDefaults.object(forKey:) described>"; then "date.fraction=" and
//         "double.negativeZero=" with those keys read through a suite.
if command == "userdefaults-samples" {
    guard arguments.count >= 3, let userDefaults = UserDefaults(suiteName: arguments[2]) else {
        fail("usage: defaults-test-helper userdefaults-samples <path>")
    }
    // NB: in a function, so the suite and what it caches are gone before `exit`: LeakSanitizer
    // cannot follow the references its values keep in enum payloads (see .ci/lsan-suppressions.txt).
    func printSamples() {
        let suite = Defaults.Suite(userDefaults: userDefaults)
        for sample in PropertyListSamples.all {
            let plist = PropertyListSamples.describe(propertyList: userDefaults.object(forKey: sample.name))
            print("\(sample.name) value=\(sample.read(suite)) plist=\(plist)")
        }
        let date = suite[Defaults.Key<Date?>("date.fraction", suite: suite)]
        print("date.fraction=\(date.map { PropertyListSamples.describe($0) } ?? "nothing stored")")
        let zero = suite[Defaults.Key<Double?>("double.negativeZero", suite: suite)]
        print("double.negativeZero=\(zero.map { PropertyListSamples.describe($0) } ?? "nothing stored")")
    }
    printSamples()
    exit(0)
}

//     defaults-test-helper read-standard <name>:<int|string|bool|double>... [-name value ...]
//         reads each key (default: 0, "none", false, 0.5) through the standard suite, whose
//         launch-argument overrides are on, and prints "<name>=<value>" for each, then one
//         "error <description>" line per reported problem. With $HELPER_ENV_PREFIX set, the
//         standard suite also takes overrides from environment variables with that prefix; with
//         $HELPER_NO_ARGUMENTS set, launch arguments are turned off first.
if command == "read-standard" {
    let errors = Lock<[String]>([])
    Defaults.errorHandler = { error in errors.withLock { $0.append("\(error)") } }
    if ProcessInfo.processInfo.environment["HELPER_NO_ARGUMENTS"] != nil {
        Defaults.Suite.standardReadsLaunchArguments = false
    }
    if let prefix = ProcessInfo.processInfo.environment["HELPER_ENV_PREFIX"] {
        Defaults.Suite.standard.overrideWithEnvironment(prefix: prefix)
    }
    for key in arguments.dropFirst(2).prefix(while: { !$0.hasPrefix("-") }) {
        let parts = key.split(separator: ":").map(String.init)
        guard parts.count == 2 else { fail("expected <name>:<type>, got \(key)") }
        let name = parts[0]
        let value: String
        switch parts[1] {
        case "int": value = "\(Defaults[Defaults.Key<Int>(name, default: 0)])"
        case "string": value = Defaults[Defaults.Key<String>(name, default: "none")]
        case "bool": value = "\(Defaults[Defaults.Key<Bool>(name, default: false)])"
        case "double": value = "\(Defaults[Defaults.Key<Double>(name, default: 0.5)])"
        default: fail("unknown type \(parts[1])")
        }
        print("\(name)=\(value)")
    }
    for error in errors.withLock({ $0 }) { print("error \(error)") }
    exit(0)
}

//     defaults-test-helper read-overrides <file> arguments|environment [-name value ...]
//         opens the file's suite with overrides from this process's launch arguments, or from its
//         environment variables prefixed OVERRIDE_, reads every LaunchOverrideSamples key and
//         prints "<name>=<value described>" for each, then "error <description>" per problem.
if command == "read-overrides" {
    guard arguments.count >= 4 else { fail("usage: defaults-test-helper read-overrides <file> arguments|environment") }
    let errors = Lock<[String]>([])
    let suite = Defaults.Suite(fileURL: URL(fileURLWithPath: arguments[2])) { error in
        errors.withLock { $0.append("\(error)") }
    }
    if arguments[3] == "environment" {
        suite.overrideWithEnvironment(prefix: "OVERRIDE_")
    } else {
        suite.overrideWithLaunchArguments()
    }
    for sample in LaunchOverrideSamples.all {
        print("\(sample.name)=\(sample.read(suite))")
    }
    for error in errors.withLock({ $0 }) { print("error \(error)") }
    exit(0)
}

if command == "corrupt-standard" {
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

guard arguments.count >= 3 else { fail("usage: defaults-test-helper \(command) <file> …") }
let url = URL(fileURLWithPath: arguments[2])
let rest = Array(arguments.dropFirst(3))

switch command {
case "write-and-exit":
    guard rest.count == 2 else { fail("usage: write-and-exit <file> <key> <value>") }
    let key = Defaults.Key<String>(rest[0], default: "", suite: Defaults.Suite(fileURL: url))
    Defaults[key] = rest[1]
    print("wrote")

case "full-disk":
    guard rest.count == 2 else { fail("usage: full-disk <file> <key> <value>") }
    let errors = Lock<[String]>([])
    let suite = Defaults.Suite(fileURL: url) { error in errors.withLock { $0.append(error.description) } }
    let limited = Defaults.Key<String>(rest[0], default: "", suite: suite)
    let before = try Data(contentsOf: url)
    signal(SIGXFSZ, SIG_IGN)
    var limit = rlimit()
    getrlimit(Int32(RLIMIT_FSIZE.rawValue), &limit)
    let original = limit
    limit.rlim_cur = rlim_t(before.count)
    setrlimit(Int32(RLIMIT_FSIZE.rawValue), &limit)
    Defaults[limited] = rest[1]
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
    print("after lifting the limit: \(try String(contentsOf: url, encoding: .utf8).contains(rest[1]))")

case "write":
    guard rest.count >= 2 else { fail("usage: write <file> <key> <int>…") }
    let suite = Defaults.Suite(fileURL: url)
    let key = Defaults.Key<Int>(rest[0], default: 0, suite: suite)
    for text in rest.dropFirst() {
        guard let value = Int(text) else { fail("not an integer: \(text)") }
        suite[key] = value
        // A failure is an exit status and a line, not a crash (the ForeignFileLink test expects
        // this write to be refused).
        do { try suite.synchronize() } catch { fail("not written: \(error)") }
    }
    say("written")

case "write-keys":
    guard rest.count == 2, let count = Int(rest[1]) else { fail("usage: write-keys <file> <prefix> <count>") }
    let suite = Defaults.Suite(fileURL: url)
    for index in 0..<count {
        suite[Defaults.Key<Int>("\(rest[0])-\(index)", default: -1, suite: suite)] = index
    }
    try suite.synchronize()
    say("wrote \(count)")

case "increment":
    guard rest.count == 2, let count = Int(rest[1]) else { fail("usage: increment <file> <key> <count>") }
    let suite = Defaults.Suite(fileURL: url)
    let key = Defaults.Key<Int>(rest[0], default: 0, suite: suite)
    for _ in 0..<count {
        try suite.exclusiveTransaction { suite[key] += 1 }
    }
    say("incremented \(count)")

case "write-forever":
    guard rest.count == 3, let size = Int(rest[1]), let first = Int(rest[2]) else {
        fail("usage: write-forever <file> <key> <bytes> <first>")
    }
    let suite = Defaults.Suite(fileURL: url)
    let key = Defaults.Key<[String]>(rest[0], default: [], suite: suite)
    let filler = String(repeating: "x", count: max(size / 16, 1))
    var sequence = first - 1
    while true {
        sequence += 1
        // The first element names the write, so the test can tell which one reached the file.
        suite[key] = ["\(sequence)"] + Array(repeating: filler, count: 16)
        try suite.synchronize()
        say("synced \(sequence)")
    }

case "hold-lock":
    // Takes the file's exclusive lock as any writer does (flock of `<file>.lock`), says so, and
    // holds it until killed: a test stops this process (SIGSTOP) to make a stalled holder.
    let descriptor = open(url.path + ".lock", O_RDONLY | O_CREAT | O_CLOEXEC, 0o600)
    guard descriptor >= 0, flock(descriptor, LOCK_EX) == 0 else { fail("cannot lock \(url.path).lock") }
    say("locked")
    while true { pause() }
case "old-version":
    try OldVersion.write(to: url)
    say("written")
case "new-version":
    try NewVersion.open(url)
case "rolling":
    RollingVersion.follow(url)
case "publish-schema":
    try RollingVersion.publishSchema(besides: url)
case "pending-wins", "exclusive-full-disk", "broken-full-disk", "userdefaults-edit":
    try runFailureCommands(command, url: url, rest: rest)
case "release-outside-lock", "read-only", "follow-read-only", "pending-then-read-only", "remove-all", "watch":
    try runOutsideLockAndWatchingCommands(command, url: url, rest: rest)
case "secret-service":
    try runSecretCommands(command, url: url, rest: rest)
default:
    fail("unknown command \(command)")
}

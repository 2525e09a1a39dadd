// A libFuzzer target over a settings file's whole load path; `scripts/fuzz` builds and runs it.
//
// Each input is written as a settings file and opened as a suite; keys of several types are read,
// one key is written and synchronized, and then:
// - what the store wrote must parse, and open with no problem reported;
// - every key the input held, other than the one written, must still hold what it held.
// Built without `-DDEFAULTS_FUZZ` (as `swift build` does) it only says how to run it.
// @testable: fuzzes the file reader's parsers (`FileStorage.snapshot(of:)`, `parseChange(of:to:)`)
// directly.
@testable import Defaults
import Foundation

#if canImport(Glibc)
import Glibc
#endif

#if DEFAULTS_FUZZ
/// libFuzzer's driver, from `libclang_rt.fuzzer_no_main`: runs `test` on every input.
@_silgen_name("LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<Int32>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ test: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32
) -> Int32

/// Where each input is written: a fresh folder per run (a tmpfs when TMPDIR is one).
nonisolated(unsafe) var folder = ""
nonisolated(unsafe) var round = 0

final class Problems: Sendable {
    let log = Lock<[Defaults.StorageError]>([])
    var handler: @Sendable (Defaults.StorageError) -> Void {
        { [self] error in self.log.withLock { $0.append(error) } }
    }
    var all: [Defaults.StorageError] { log.withLock { $0 } }
}

enum Sample: String, Defaults.Serializable { case a, b }
struct Record: Codable, Equatable, Defaults.Serializable {
    var name: String
    var values: [Int]
}

func check(_ condition: Bool, _ message: @autoclosure () -> String) {
    guard condition else {
        FileHandle.standardError.write(Data(("invariant broken: " + message() + "\n").utf8))
        abort()
    }
}

func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    round += 1
    // NB: a new file name each time: one state per file per process would otherwise carry over.
    let file = URL(fileURLWithPath: "\(folder)/input-\(round).json")
    let copy = URL(fileURLWithPath: "\(folder)/copy-\(round).json")
    defer {
        unlink(file.path)
        unlink(copy.path)
        unlink(file.path + ".lock")
        unlink(copy.path + ".lock")
    }
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    FileManager.default.createFile(atPath: file.path, contents: Data(bytes))
    let original = (try? FileStorage.members(of: bytes)) ?? nil
    // The reader that leaves a record of migrations unparsed takes and refuses what a whole parse
    // does, refusing it the same way, and makes the same members.
    let deferring: Result<FileStorage.Snapshot?, JSONParser.Failure> = Result { () throws(JSONParser.Failure) in
        try FileStorage.snapshot(of: bytes)
    }
    let wholeParse: Result<JSONValue, JSONParser.Failure> = Result { () throws(JSONParser.Failure) in
        try JSONParser.parse(bytes)
    }
    switch (deferring, wholeParse) {
    case (.success(let snapshot), .success):
        check(snapshot?.members == original, "the input read with its record deferred differs from its whole parse")
    case (.failure(let deferred), .failure(let whole)):
        // NB: a byte order mark is taken off first there, and not by `JSONParser.parse`.
        check(
            deferred.description == whole.description || bytes.starts(with: [0xEF, 0xBB, 0xBF]),
            "refused as \(deferred), and by a whole parse as \(whole)"
        )
    default:
        check(
            bytes.starts(with: [0xEF, 0xBB, 0xBF]),
            "the input read with its record deferred is taken by one parse only"
        )
    }
    let problems = Problems()
    do {
        let suite = Defaults.Suite(fileURL: file, errorHandler: problems.handler)
        _ = suite[Defaults.Key<Int>("a", default: 0, suite: suite)]
        _ = suite[Defaults.Key<Double>("b", default: 0, suite: suite)]
        _ = suite[Defaults.Key<String>("c", default: "", suite: suite)]
        _ = suite[Defaults.Key<[String: Int]>("d", default: [:], suite: suite)]
        _ = suite[Defaults.Key<Record?>("e", suite: suite)]
        _ = suite[Defaults.Key<Defaults.AnySerializable>("f", default: nil, suite: suite)]
        _ = suite[Defaults.Key<Sample>("g", default: .a, suite: suite)]
        _ = suite[Defaults.Key<[Double]>("h", default: [], suite: suite)]
        suite[Defaults.Key<Int>("written", default: 0, suite: suite)] = size
        try? suite.synchronize()
    }
    let written = (try? Data(contentsOf: file)).map(Array.init) ?? []
    let reread = (try? FileStorage.members(of: written)) ?? nil
    check(reread != nil, "the store wrote a file that does not parse")
    // A suite on a copy (another state) opens it with no problem reported.
    FileManager.default.createFile(atPath: copy.path, contents: Data(written))
    let copyProblems = Problems()
    let reopened = Defaults.Suite(fileURL: copy, errorHandler: copyProblems.handler)
    check(reopened.storedValues()["written"] != nil, "the written key is missing")
    check(copyProblems.all.isEmpty, "reopening what was written reported \(copyProblems.all)")
    if let original, let reread {
        for (name, value) in original where name != "written" {
            check(reread[name] == value, "key \(name) changed")
        }
    }
    // A version parsed only where it differs from the one known parses as the whole file does.
    if let known = (try? FileStorage.snapshot(of: written)) ?? nil,
        let changed = FileStorage.parseChange(of: known, to: bytes)
    {
        let whole = (try? FileStorage.snapshot(of: bytes)) ?? nil
        check(whole?.members == changed.members, "the input parsed as a change differs from its whole parse")
        check(whole?.memberStarts == changed.memberStarts, "the input's members start elsewhere parsed as a change")
        var differing: Set<String> = []
        for (name, value) in changed.members where known.members[name] != value { differing.insert(name) }
        for name in known.members.keys where changed.members[name] == nil { differing.insert(name) }
        check(Set(changed.changes?.names ?? []) == differing, "the changed names are not those that changed")
    }
    return 0
}

@_cdecl("defaults_fuzz_main")
func fuzzMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    var template = Array("\(NSTemporaryDirectory())/defaults-fuzz-XXXXXX".utf8CString)
    folder = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)) }
    // NB: half the inputs are broken files, and waiting for an editor to finish would cost 300 ms each.
    FileStorage.waitsForBrokenFilesToSettle.store(false, ordering: .relaxed)
    var count = argc
    var arguments = argv
    return LLVMFuzzerRunDriver(&count, &arguments) { data, size in fuzzOne(data, size) }
}
#else
/// Built without the fuzzer, as `swift build` builds it.
@main
enum NotFuzzing {
    static func main() {
        print("defaults-fuzz: build and run it with scripts/fuzz [seconds]")
    }
}
#endif

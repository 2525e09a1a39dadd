// Small pieces every part of the soak uses: the clock, the seeded generator, progress lanes,
// whole-line output, canonical values and a JSON value that keeps integers, doubles and booleans apart.
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// `CLOCK_MONOTONIC` in nanoseconds: one clock for every process of the machine, so times taken in
/// the worker processes compare with the coordinator's.
func now() -> Int {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return time.tv_sec * 1_000_000_000 + time.tv_nsec
}

/// Seconds, for printing.
func seconds(_ nanoseconds: Int) -> String {
    String(format: "%.1f s", Double(nanoseconds) / 1e9)
}

/// A seeded generator (SplitMix64): every choice a thread makes follows from the run's printed seed
/// and the thread's place, though how the threads interleave does not.
struct SoakRandom: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) {
        state = seed
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var mixed = state
        mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
        return mixed ^ (mixed >> 31)
    }

    /// True with probability `probability`.
    mutating func chance(_ probability: Double) -> Bool {
        Double.random(in: 0..<1, using: &self) < probability
    }

    /// A number in `range`.
    mutating func int(_ range: Range<Int>) -> Int {
        Int.random(in: range, using: &self)
    }
}

/// The seed of thread `thread` of process `process`, derived from the run's seed.
func threadSeed(_ seed: UInt64, process: Int, thread: Int) -> UInt64 {
    var generator = SoakRandom(seed: seed ^ (UInt64(process) << 40) ^ (UInt64(thread) << 20))
    return generator.next()
}

/// A progress counter that one thread advances and the watchdog reads.
final class Lane: Sendable {
    let name: String
    private let count = Atomic<Int>(0)

    init(_ name: String) {
        self.name = name
    }

    func tick() {
        count.add(1, ordering: .relaxed)
    }

    var value: Int { count.load(ordering: .relaxed) }
}

/// Writes whole lines to standard output from any thread (it may be a pipe to the coordinator).
enum Output {
    private static let lock = Mutex(())

    static func line(_ text: String) {
        lock.withLock { _ in
            FileHandle.standardOutput.write(Data((text + "\n").utf8))
        }
    }
}

/// One line of text with no tabs or line breaks, for the line protocol between processes.
func oneLine(_ text: String) -> String {
    String(text.map { $0 == "\t" || $0 == "\n" || $0 == "\r" ? " " : $0 })
}

/// The canonical text of a value, the same in every process: what observers record and what a
/// fresh suite's values are compared with.
func canonical<Value>(_ value: Value) -> String {
    String(reflecting: value)
}

/// A JSON value that keeps booleans, integers and doubles apart, so the third actor's edits write
/// back every value it did not mean to change as it was.
enum AnyJSON: Codable, Equatable, Sendable {
    case null
    case bool(Bool)
    case int(Int)
    case double(Double)
    case string(String)
    case array([AnyJSON])
    case object([String: AnyJSON])

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int.self) {
            self = .int(value)
        } else if let value = try? container.decode(Double.self) {
            self = .double(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([AnyJSON].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: AnyJSON].self))
        }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .int(let value): try container.encode(value)
        case .double(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }

    /// The members of a settings file, or `nil` when `bytes` is not one JSON object.
    static func members(of bytes: Data) -> [String: AnyJSON]? {
        guard case .object(let members)? = try? JSONDecoder().decode(AnyJSON.self, from: bytes) else { return nil }
        return members
    }

    /// A settings file holding `members`, pretty-printed with sorted keys, as a person's editor might.
    static func document(_ members: [String: AnyJSON]) -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(AnyJSON.object(members))) ?? Data("{}".utf8)
    }
}

/// The whole file at `path`, or `nil` when it cannot be opened (it is missing).
func readWholeFile(_ path: String) -> Data? {
    let descriptor = open(path, O_RDONLY | O_CLOEXEC)
    guard descriptor >= 0 else { return nil }
    defer { close(descriptor) }
    var data = Data()
    var buffer = [UInt8](repeating: 0, count: 65_536)
    while true {
        let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
        if count < 0, errno == EINTR { continue }
        guard count > 0 else { break }
        data.append(contentsOf: buffer[0..<count])
    }
    return data
}

/// Writes all of `data` to `descriptor`; false if a write failed.
func writeAll(_ data: Data, to descriptor: Int32) -> Bool {
    var offset = 0
    let bytes = [UInt8](data)
    while offset < bytes.count {
        let written = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress! + offset, $0.count - offset) }
        if written < 0, errno == EINTR { continue }
        guard written > 0 else { return false }
        offset += written
    }
    return true
}

/// Reads lines from a file descriptor (a child's standard output, or standard input), one call at a time.
final class LineReader {
    private let descriptor: Int32
    private var pending: [UInt8] = []
    private var buffer = [UInt8](repeating: 0, count: 65_536)

    init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    /// The next line without its newline; `nil` at the end of input.
    func next() -> String? {
        while true {
            if let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: pending[..<newline], as: UTF8.self)
                pending.removeSubrange(...newline)
                return line
            }
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { return nil }
            pending.append(contentsOf: buffer[0..<count])
        }
    }
}

/// The resident set size of process `pid` in kB, from `/proc/<pid>/status`; `nil` once it is gone.
func residentKilobytes(of pid: Int32) -> Int? {
    guard let data = readWholeFile("/proc/\(pid)/status") else { return nil }
    for line in String(decoding: data, as: UTF8.self).split(separator: "\n") where line.hasPrefix("VmRSS:") {
        return Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "")
    }
    return nil
}

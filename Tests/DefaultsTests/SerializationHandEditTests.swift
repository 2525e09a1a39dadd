// @testable: checks that a hand-edited number decodes strictly (`ValueCoding.decode(_:as:)`).
@testable import Defaults
import Foundation
import Testing

/// Files a person edited: what reads, what falls back to the default, and that nothing is lost.
@Suite struct SerializationHandEditTests {
    @Test func aFileStartingWithAByteOrderMarkIsReadNotMovedAside() throws {
        try withSerializationFile { file in
            try FileManager.default.createDirectory(
                at: file.url.deletingLastPathComponent(),
                withIntermediateDirectories: true
            )
            try Data([0xEF, 0xBB, 0xBF] + Array("{\"port\" : 8080}\n".utf8)).write(to: file.url)
            let suite = file.makeSuite()
            #expect(suite[Defaults.Key<Int>("port", default: 0, suite: suite)] == 8080)
            #expect(file.errors.errors.isEmpty)
        }
    }

    @Test func floatingPointNumbersTooLargeForTheTypeReadAsTheDefault() throws {
        try withSerializationFile { file in
            try FileManager.default.createDirectory(
                at: file.url.deletingLastPathComponent(),
                withIntermediateDirectories: true
            )
            try Data("{\"float\" : 1e39, \"double\" : 1e400, \"fine\" : 3.4e38}\n".utf8).write(to: file.url)
            let suite = file.makeSuite()
            #expect(suite[Defaults.Key<Float>("float", default: 1, suite: suite)] == 1)
            #expect(suite[Defaults.Key<Double>("double", default: 2, suite: suite)] == 2)
            #expect(suite[Defaults.Key<Double>("float", default: 0, suite: suite)] == 1e39)
            #expect(suite[Defaults.Key<Float>("fine", default: 0, suite: suite)] == 3.4e38)
        }
    }

    @Test(arguments: [
        ("3.0", 3), ("1e3", 1000), ("1.5e1", 15), ("-2.00", -2), ("0.001e3", 1), ("10e-1", 1), ("0e5", 0),
        ("9007199254740993.0", 9_007_199_254_740_993),
    ])
    func wholeNumbersWrittenWithAFractionOrExponentReadExactly(text: String, expected: Int) {
        #expect(ValueCoding.decode(.number(text), as: Int.self) == expected)
    }

    @Test(arguments: ["0.5", "1e-1", "100e-3", "1e40", "3.0000001", "1e999999999999"])
    func numbersThatAreNotWholeOrOutOfRangeDoNotReadAsIntegers(text: String) {
        #expect(ValueCoding.decode(.number(text), as: Int.self) == nil)
        #expect(ValueCoding.decode(.number(text), as: Int64.self) == nil)
    }
}

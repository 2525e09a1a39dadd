// @testable: checks the integer formatter `decimalText(_:)` against `String(value)`, and reads hand-written 128-bit numbers through `ValueCoding`.
@testable import Defaults
import Foundation
import Testing

@Suite struct SerializationScalarTests {
    @Test func everyIntegerWidthSurvivesTheFileAtItsExtremes() async throws {
        var batch = SerializationBatch()
        batch.expectLossless(Int.min, default: 0, storedAs: .number("-9223372036854775808"))
        batch.expectLossless(Int.max, default: 0, storedAs: .number("9223372036854775807"))
        batch.expectLossless(Int8.min, default: 0, storedAs: .number("-128"))
        batch.expectLossless(Int8.max, default: 0, storedAs: .number("127"))
        batch.expectLossless(Int16.min, default: 0, storedAs: .number("-32768"))
        batch.expectLossless(Int16.max, default: 0, storedAs: .number("32767"))
        batch.expectLossless(Int32.min, default: 0, storedAs: .number("-2147483648"))
        batch.expectLossless(Int32.max, default: 0, storedAs: .number("2147483647"))
        batch.expectLossless(Int64.min, default: 0, storedAs: .number("-9223372036854775808"))
        batch.expectLossless(Int64.max, default: 0, storedAs: .number("9223372036854775807"))
        batch.expectLossless(UInt.min, default: 1, storedAs: .number("0"))
        batch.expectLossless(UInt.max, default: 0, storedAs: .number("18446744073709551615"))
        batch.expectLossless(UInt8.min, default: 1, storedAs: .number("0"))
        batch.expectLossless(UInt8.max, default: 0, storedAs: .number("255"))
        batch.expectLossless(UInt16.min, default: 1, storedAs: .number("0"))
        batch.expectLossless(UInt16.max, default: 0, storedAs: .number("65535"))
        batch.expectLossless(UInt32.min, default: 1, storedAs: .number("0"))
        batch.expectLossless(UInt32.max, default: 0, storedAs: .number("4294967295"))
        batch.expectLossless(UInt64.min, default: 1, storedAs: .number("0"))
        batch.expectLossless(UInt64.max, default: 0, storedAs: .number("18446744073709551615"))
        batch.expectLossless(true, default: false, storedAs: .bool(true))
        batch.expectLossless(false, default: true, storedAs: .bool(false))
        try await batch.run()
    }

    @Test func int128AndUInt128SurviveTheFileAtTheirExtremesWrittenInFull() async throws {
        var batch = SerializationBatch()
        batch.expectLossless(Int128.min, default: 0, storedAs: .number("-170141183460469231731687303715884105728"))
        batch.expectLossless(Int128.max, default: 0, storedAs: .number("170141183460469231731687303715884105727"))
        batch.expectLossless(UInt128.min, default: 1, storedAs: .number("0"))
        batch.expectLossless(UInt128.max, default: 0, storedAs: .number("340282366920938463463374607431768211455"))
        // One past 64 bits each way: where digits formatted through a `UInt64` would wrap.
        batch.expectLossless(Int128(UInt64.max) + 1, default: 0, storedAs: .number("18446744073709551616"))
        batch.expectLossless(-Int128(UInt64.max) - 1, default: 0, storedAs: .number("-18446744073709551616"))
        batch.expectLossless(UInt128(UInt64.max) + 1, default: 0, storedAs: .number("18446744073709551616"))
        try await batch.run()
        for value: Int128 in [.min, .max, .min + 1, .max - 1, 0, -1, Int128(Int64.min) - 1, Int128(UInt64.max) + 1] {
            #expect(decimalText(value) == String(value))
        }
        for value: UInt128 in [.max, .max - 1, UInt128(UInt64.max) + 1] { #expect(decimalText(value) == String(value)) }
        // A hand-edited exponent is shifted exactly, 39 digits too; one past the range is not read.
        #expect(
            ValueCoding.decode(.number("1.7e38"), as: Int128.self) == Int128("17" + String(repeating: "0", count: 37))
        )
        #expect(ValueCoding.decode(.number("340282366920938463463374607431768211456"), as: UInt128.self) == nil)
    }

    @Test func int128AndUInt128GoThroughAUserDefaultsAsOtherIntegersDo() throws {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("SerializationScalarTests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        // An absolute suite name is the file's path without ".plist": in the temporary folder.
        let userDefaults = try #require(UserDefaults(suiteName: directory.appendingPathComponent("prefs").path))
        // NB: written before the folder goes (defers run last first), as UserDefaultsPropertyListTests does.
        defer { userDefaults.synchronize() }
        let suite = Defaults.Suite(userDefaults: userDefaults)
        let small = Defaults.Key<Int128>("small", default: 0, suite: suite)
        let big = Defaults.Key<Int128>("big", default: 0, suite: suite)
        let vast = Defaults.Key<UInt128>("vast", default: 0, suite: suite)
        suite[small] = -42
        suite[big] = .min
        suite[vast] = .max
        // Within 64 bits an integer, as any other width; past them (no property-list type holds
        // one) the JSON text the adapter keeps for any number a property list would change.
        #expect(userDefaults.integer(forKey: "small") == -42)
        #expect(userDefaults.object(forKey: "big") is Data)
        let reader = Defaults.Suite(userDefaults: userDefaults)
        #expect(reader[small] == -42)
        #expect(reader[big] == .min)
        #expect(reader[vast] == .max)
    }

    @Test func integersAreWrittenAsTheirStandardDecimalText() {
        // Every power of ten and its neighbours, both signs, and the extremes of every width.
        var values: [Int64] = [0, 1, -1, 9, -9, Int64.min, Int64.max, Int64.min + 1, Int64.max - 1]
        var power: Int64 = 1
        for _ in 0..<18 {
            power *= 10
            values += [power - 1, power, power + 1, -(power - 1), -power, -(power + 1)]
        }
        for value in values {
            #expect(decimalText(value) == String(value))
            #expect(decimalText(Int(value)) == String(Int(value)))
        }
        for value: UInt64 in [
            0, 9, 10, UInt64.max, UInt64.max - 1, 10_000_000_000_000_000_000, 9_999_999_999_999_999_999,
        ] {
            #expect(decimalText(value) == String(value))
        }
        for value in [Int8.min, Int8.max] { #expect(decimalText(value) == String(value)) }
        for value in [Int16.min, Int16.max] { #expect(decimalText(value) == String(value)) }
        for value in [Int32.min, Int32.max] { #expect(decimalText(value) == String(value)) }
        for value in [UInt8.max] { #expect(decimalText(value) == String(value)) }
        for value in [UInt16.max] { #expect(decimalText(value) == String(value)) }
        for value in [UInt32.max] { #expect(decimalText(value) == String(value)) }
    }

    @Test func doublesSurviveTheFileBitForBit() async throws {
        var batch = SerializationBatch()
        let cases: [(Double, JSONValue?)] = [
            (.infinity, .string("Infinity")),
            (-.infinity, .string("-Infinity")),
            (.greatestFiniteMagnitude, .number("1.7976931348623157e+308")),
            (-.greatestFiniteMagnitude, nil),
            (.leastNormalMagnitude, nil),
            (.leastNonzeroMagnitude, .number("5e-324")),
            (-0.0, .number("-0.0")),
            (0.0, .number("0.0")),
            (0.1, .number("0.1")),
            (1.0 / 3.0, nil),
            (123_456_789.987_654_321, nil),
        ]
        for (value, json) in cases {
            batch.add(value, default: 42) { readBack, stored in
                #expect(readBack.bitPattern == value.bitPattern, "\(value) read back as \(readBack)")
                if let json { #expect(stored == json) }
            }
        }
        batch.add(Double.nan, default: 42) { readBack, stored in
            #expect(readBack.isNaN)
            #expect(stored == .string("NaN"))
        }
        try await batch.run()
    }

    @Test func floatsSurviveTheFileBitForBitWrittenWithFloatPrecision() async throws {
        var batch = SerializationBatch()
        let cases: [(Float, JSONValue?)] = [
            (.infinity, .string("Infinity")),
            (-.infinity, .string("-Infinity")),
            (.greatestFiniteMagnitude, .number("3.4028235e+38")),
            (.leastNormalMagnitude, .number("1.1754944e-38")),
            (.leastNonzeroMagnitude, .number("1e-45")),
            (-0.0, .number("-0.0")),
            (0.1, .number("0.1")),
            (1.0 / 3.0, .number("0.33333334")),
        ]
        for (value, json) in cases {
            batch.add(value, default: 42) { readBack, stored in
                #expect(readBack.bitPattern == value.bitPattern, "\(value) read back as \(readBack)")
                if let json { #expect(stored == json) }
            }
        }
        batch.add(Float.nan, default: 42) { readBack, stored in
            #expect(readBack.isNaN)
            #expect(stored == .string("NaN"))
        }
        try await batch.run()
    }

    @Test func aFloatIsNotWidenedToDoubleOnTheWayToTheFile() throws {
        try withSerializationFile { file in
            let writer = file.makeSuite()
            writer[Defaults.Key<Float>("ratio", default: 0, suite: writer)] = 0.1
            try writer.synchronize()
            let reader = try file.makeReader()
            // NB: widened first, it would read as 0.10000000149011612.
            #expect(reader[Defaults.Key<Double>("ratio", default: 0, suite: reader)] == 0.1)
            #expect(reader[Defaults.Key<Float>("ratio", default: 0, suite: reader)] == Float(0.1))
        }
    }

    @Test func datesSurviveTheFileBitForBit() async throws {
        var batch = SerializationBatch()
        let dates = [
            Date.now,
            Date(timeIntervalSince1970: 1_700_000_000),
            Date(timeIntervalSince1970: 1_700_000_000.123),
            Date(timeIntervalSince1970: -1_234_567.891),
            Date(timeIntervalSinceReferenceDate: 0.000_1),
            Date(timeIntervalSinceReferenceDate: -0.0),
            Date.distantPast,
            Date.distantFuture,
        ]
        for date in dates {
            batch.add(date, default: Date(timeIntervalSinceReferenceDate: 42)) { readBack, _ in
                let expected = date.timeIntervalSinceReferenceDate.bitPattern
                #expect(
                    readBack.timeIntervalSinceReferenceDate.bitPattern == expected,
                    "\(date.timeIntervalSinceReferenceDate) read back as \(readBack.timeIntervalSinceReferenceDate)"
                )
            }
        }
        try await batch.run()
    }

    @Test func aWholeSecondDateIsStoredAsReadableISO8601() throws {
        let result = try serializationRoundTrip(
            Date(timeIntervalSince1970: 1_700_000_000),
            default: .distantPast
        )
        #expect(result.stored == .string("2023-11-14T22:13:20.000Z"))
        #expect(result.value == Date(timeIntervalSince1970: 1_700_000_000))
    }

    @Test func aHandWrittenISO8601DateWithoutFractionIsRead() throws {
        try withSerializationFile { file in
            try Data(#"{ "since" : "2023-11-14T22:13:20Z" }"#.utf8).write(to: file.url)
            let suite = file.makeSuite()
            #expect(
                suite[Defaults.Key<Date>("since", default: .distantPast, suite: suite)].timeIntervalSince1970
                    == 1_700_000_000
            )
            #expect(file.errors.errors.isEmpty)
        }
    }

    @Test func dataOfEveryByteValueSurvivesTheFile() throws {
        let bytes = Data((0...255).map { UInt8($0) } + (0...255).reversed().map { UInt8($0) })
        let result = try serializationRoundTrip(bytes, default: Data([1, 2, 3]))
        #expect(result.value == bytes)
        #expect(result.stored == .string(bytes.base64EncodedString()))
        #expect(result.errors.isEmpty)
    }

    @Test func urlsUUIDsAndRangesSurviveTheFile() async throws {
        var batch = SerializationBatch()
        let web = try #require(URL(string: "https://example.com:8443/a/b?q=1&r=%20x#frag"))
        batch.expectLossless(web, default: URL(fileURLWithPath: "/"), storedAs: .string(web.absoluteString))
        let file = URL(fileURLWithPath: "/tmp/with space/ünïcode.txt")
        batch.expectLossless(file, default: URL(fileURLWithPath: "/"))
        let uuid = try #require(UUID(uuidString: "e621e1f8-c36c-495a-93fc-0c247a3e6e5f"))
        batch.expectLossless(uuid, default: UUID(), storedAs: .string("E621E1F8-C36C-495A-93FC-0C247A3E6E5F"))
        batch.expectLossless(-5..<10, default: 0..<1, storedAs: .array([.number("-5"), .number("10")]))
        batch.expectLossless(3..<3, default: 0..<1, storedAs: .array([.number("3"), .number("3")]))
        batch.expectLossless(0.1...2.5, default: 0...1, storedAs: .array([.number("0.1"), .number("2.5")]))
        batch.expectLossless(-Double.infinity...0, default: 0...1)
        batch.expectLossless(UInt64.max...UInt64.max, default: 0...1)
        try await batch.run()
    }

    @Test func emptyValuesStayEmptyInsteadOfFallingBackToTheirDefault() async throws {
        var batch = SerializationBatch()
        batch.expectLossless("", default: "fallback", storedAs: .string(""))
        batch.expectLossless([Int](), default: [1, 2, 3], storedAs: .array([]))
        batch.expectLossless([String: Int](), default: ["a": 1], storedAs: .object([:]))
        batch.expectLossless(Set<Int>(), default: [1], storedAs: .array([]))
        batch.expectLossless(Data(), default: Data([1]), storedAs: .string(""))
        batch.expectLossless([[Int]](), default: [[1]], storedAs: .array([]))
        batch.expectLossless([[String: Int]()], default: [["a": 1]], storedAs: .array([.object([:])]))
        try await batch.run()
    }

    @Test func anOptionalKeyStoresAValueAndRemovesItWhenSetToNil() throws {
        try withSerializationFile { file in
            let writer = file.makeSuite()
            let key = Defaults.Key<Int?>("count", suite: writer)
            #expect(key.defaultValue == nil)
            #expect(writer[key] == nil)

            writer[key] = 7
            writer[Defaults.Key<String>("other", default: "", suite: writer)] = "kept"
            try writer.synchronize()
            #expect(try file.members()["count"] == .number("7"))
            let firstReader = try file.makeReader()
            #expect(firstReader[Defaults.Key<Int?>("count", suite: firstReader)] == 7)

            writer[key] = nil
            #expect(writer[key] == nil)
            try writer.synchronize()
            let members = try file.members()
            #expect(members["count"] == nil)
            #expect(members["other"] == .string("kept"))
            let secondReader = try file.makeReader()
            #expect(secondReader[Defaults.Key<Int?>("count", suite: secondReader)] == nil)
            #expect(file.errors.errors.isEmpty)
        }
    }

    @Test func anOptionalKeyWithANonNilDefaultReadsTheStoredValue() throws {
        let result = try serializationRoundTrip(Optional("stored"), default: "fallback")
        #expect(result.value == "stored")
        #expect(result.stored == .string("stored"))
    }
}

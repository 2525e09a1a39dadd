// @testable: the in-place writer reaches a box's value by its offset in the object
// (`InPlaceWriter.boxValueOffset`), which only the inside can hold to the value's real address.
@testable import Defaults
import Foundation
import Testing

/// The in-place writer finds a box's value where Swift keeps it, for every type it takes.
@Suite struct InPlaceWriterTests {
    /// Writes `first`, then `second`, into a box of `first` through the type's writer, and checks
    /// the address the writer uses, the value replaced and the value left.
    private func check<Value: Sendable & Equatable>(_ first: Value, _ second: Value) throws {
        let writer = try #require(Defaults.Suite.InPlaceWriter.make(for: Value.self))
        let box = Defaults.Suite.Box(first)
        let object = UnsafeRawPointer(Unmanaged.passUnretained(box).toOpaque())
        #expect(Defaults.Suite.Box.valueAddress(of: box) == object + Defaults.Suite.InPlaceWriter.boxValueOffset)
        var old = Defaults.Suite.InPlaceWriter.ValueBytes(0, 0)
        let wrote = withUnsafePointer(to: second) { writer.replace(UnsafeRawPointer($0), in: box, savingOldTo: &old) }
        #expect(wrote == (first != second))
        #expect(box.value == second)
        if wrote, writer.isObservable {
            #expect(withUnsafeBytes(of: old) { $0.loadUnaligned(as: Value.self) } == first)
        }
        // The same bits again are no change.
        #expect(
            withUnsafePointer(to: second) { writer.replace(UnsafeRawPointer($0), in: box, savingOldTo: &old) } == false
        )
    }

    @Test func everyKindOfValueIsFoundAndReplacedInPlace() throws {
        try check(Int.min, Int.max)
        try check(7, 7)
        try check(Int8(-3), Int8(4))
        try check(UInt16(1), UInt16.max)
        try check(Int32(-5), Int32(6))
        try check(UInt64.max, 0)
        try check(false, true)
        try check(Float(1.5), Float(-2.25))
        try check(3.25, -0.5)
        try check(Date(timeIntervalSince1970: 1), Date(timeIntervalSince1970: 2))
    }
}

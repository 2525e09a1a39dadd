import CAdw
import DefaultsGtk
import DefaultsObservation
import Foundation

// A scalar a schema describes, and the one widget that edits it, for the rows of a schema page
// that no Swift type of this program describes (SchemaValueRows.swift).

/// A scalar a schema describes, and what edits it.
enum ScalarShape: Equatable {
    case boolean
    case integer(lower: Double, upper: Double)
    case number(lower: Double, upper: Double)
    case string
    case choice([String])

    /// The shape `property` describes; `nil` for anything but one scalar type.
    init?(_ property: [String: Defaults.JSONValue]) {
        if case .array(let values)? = property["enum"] {
            let choices = values.compactMap { value -> String? in
                if case .string(let text) = value { return text }
                return nil
            }
            guard choices.count == values.count, !choices.isEmpty else { return nil }
            self = .choice(choices)
            return
        }
        guard case .string(let type)? = property["type"] else { return nil }
        let lower = bound(property["minimum"]) ?? bound(property["exclusiveMinimum"])
        let upper = bound(property["maximum"]) ?? bound(property["exclusiveMaximum"])
        switch type {
        case "boolean": self = .boolean
        case "string": self = .string
        case "integer":
            self = .integer(
                lower: max(lower ?? Double(Int32.min), Double(Int32.min)),
                upper: min(upper ?? Double(Int32.max), Double(Int32.max))
            )
        case "number":
            self = .number(lower: max(lower ?? -1e9, -1e15), upper: min(upper ?? 1e9, 1e15))
        default: return nil
        }
    }

    /// The decimal places a number's spin button shows (see ``ScalarEditor``).
    var digits: UInt32 {
        guard case .number(let lower, let upper) = self else { return 0 }
        return floatingStep(upper - lower < 2e9 ? upper - lower : nil).digits
    }

    /// Why the editor of this shape cannot show `value` exactly (a number past its control's
    /// range or with more decimals than it shows, text with a NUL character); `nil` when it
    /// can, or when `value` is not of this shape (the schema says what is wrong with that).
    func cannotShow(_ value: Defaults.JSONValue) -> String? {
        switch (self, value) {
        case (.integer(let lower, let upper), .number(let text)):
            guard let number = Double(text), number.rounded() == number else { return nil }
            if number < lower || number > upper {
                return "\(text) is past what its control holds, whole numbers from \(Int(lower)) to \(Int(upper))"
            }
            return sameNumber(text, String(Int(number))) ? nil : "\(text) is more precise than its control holds"
        case (.number(let lower, let upper), .number(let text)):
            guard let number = Double(text) else { return nil }
            guard number.isFinite else { return "\(text) is past what a floating-point number holds" }
            if number < lower || number > upper {
                return
                    "\(text) is past what its control holds, numbers from \(jsonNumber(lower)) to \(jsonNumber(upper))"
            }
            // What the spin button shows, compared digit by digit with what is stored: `1e-400`
            // is not the 0.00 it would show, nor `0.99999999999999999` its 1.00.
            let places = Int(digits)
            guard sameNumber(text, String(format: "%.\(places)f", number)) else {
                return "\(text) is not what its control shows (\(places) decimals, as a floating-point number)"
            }
            return nil
        case (.string, .string(let text)), (.choice, .string(let text)):
            if text.unicodeScalars.contains("\u{0}") { return "an entry cannot hold its NUL character" }
            return visible(text) == text ? nil : "it holds characters an entry would hide or reorder (\(visible(text)))"
        default:
            return nil
        }
    }

    /// The value it shows while nothing else is given.
    var zero: Defaults.JSONValue {
        switch self {
        case .boolean: .bool(false)
        case .integer(let lower, let upper): .number(String(Int(min(max(0, lower), upper))))
        case .number(let lower, let upper): .number(jsonNumber(min(max(0, lower), upper)))
        case .string: .string("")
        case .choice(let choices): .string(choices[0])
        }
    }
}

private func bound(_ value: Defaults.JSONValue?) -> Double? {
    guard case .number(let text)? = value else { return nil }
    return Double(text)
}

/// A `Double` as JSON number text: whole numbers without a fraction.
func jsonNumber(_ value: Double) -> String {
    if value.rounded() == value, abs(value) < 1e15 { return String(Int(value)) }
    return "\(value)"
}

/// The scalar shape of a property that is that scalar or null: `type` of the scalar's name and
/// "null", or `anyOf` of the scalar's schema and `{"type": "null"}`.
func nullableShape(_ property: [String: Defaults.JSONValue]) -> (
    shape: ScalarShape, property: [String: Defaults.JSONValue]
)? {
    if case .array(let types)? = property["type"], types.count == 2, types.contains(.string("null")),
        let other = types.first(where: { $0 != .string("null") })
    {
        var single = property
        single["type"] = other
        return ScalarShape(single).map { ($0, single) }
    }
    if case .array(let options)? = property["anyOf"], options.count == 2,
        options.contains(.object(["type": .string("null")]))
    {
        for case .object(let option) in options where option != ["type": .string("null")] {
            return ScalarShape(option).map { ($0, option) }
        }
    }
    return nil
}

/// One widget that edits a scalar: a switch, a spin button, an entry or a drop-down.
@MainActor
final class ScalarEditor {
    let shape: ScalarShape
    let widget: Widget
    /// Called after the person changes the value.
    var changed: (@MainActor () -> Void)?
    /// Set while the value is shown, so showing it is not taken for the person's change.
    private var isShowing = false

    init(_ shape: ScalarShape) {
        self.shape = shape
        switch shape {
        case .boolean:
            widget = gtk_switch_new()!
        case .integer(let lower, let upper):
            widget = gtk_spin_button_new_with_range(lower, upper, 1)!
            gtk_spin_button_set_digits(OpaquePointer(widget), 0)
            // As wide as its widest value: a narrower one cuts `-1999999999` to `-19999999`.
            gtk_editable_set_width_chars(
                OpaquePointer(widget),
                Int32(max(jsonNumber(lower).count, jsonNumber(upper).count))
            )
        case .number(let lower, let upper):
            let (step, digits) = floatingStep(upper - lower < 2e9 ? upper - lower : nil)
            widget = gtk_spin_button_new_with_range(lower, upper, step)!
            gtk_spin_button_set_digits(OpaquePointer(widget), digits)
            let widest = max(jsonNumber(lower).count, jsonNumber(upper).count) + Int(digits) + 1
            gtk_editable_set_width_chars(OpaquePointer(widget), Int32(widest))
        case .string:
            widget = gtk_entry_new()!
            gtk_editable_set_width_chars(OpaquePointer(widget), 16)
        case .choice(let choices):
            let strings = choiceNames(choices).map { strdup($0) } + [nil]
            defer { for string in strings { free(string) } }
            widget = strings.withUnsafeBufferPointer { buffer in
                buffer.baseAddress!
                    .withMemoryRebound(to: UnsafePointer<CChar>?.self, capacity: buffer.count) {
                        gtk_drop_down_new_from_strings($0)!
                    }
            }
        }
        gtk_widget_set_valign(widget, GTK_ALIGN_CENTER)
        let handler = RowController.Handler { [weak self] in
            guard let self, !self.isShowing else { return }
            self.changed?()
        }
        switch shape {
        case .boolean: connectNotify(widget, "active", handler)
        case .integer, .number: connect(widget, "value-changed", handler)
        case .string: connect(widget, "changed", handler)
        case .choice: connectNotify(widget, "selected", handler)
        }
        // Held by the widget.
        retain(self, by: widget)
    }

    /// The value the widget shows.
    var value: Defaults.JSONValue {
        switch shape {
        case .boolean:
            return .bool(gtk_switch_get_active(OpaquePointer(widget)) != 0)
        case .integer:
            return .number(String(Int(gtk_spin_button_get_value(OpaquePointer(widget)))))
        case .number:
            let digits = Int(gtk_spin_button_get_digits(OpaquePointer(widget)))
            let shown = Double(String(format: "%.\(digits)f", gtk_spin_button_get_value(OpaquePointer(widget)))) ?? 0
            return .number(jsonNumber(shown))
        case .string:
            return .string(String(cString: gtk_editable_get_text(OpaquePointer(widget))))
        case .choice(let choices):
            return .string(choices[min(Int(gtk_drop_down_get_selected(OpaquePointer(widget))), choices.count - 1)])
        }
    }

    /// Shows `value` (a value of another shape shows the shape's zero) without calling ``changed``.
    func show(_ value: Defaults.JSONValue) {
        guard value != self.value else { return }
        isShowing = true
        defer { isShowing = false }
        switch (shape, value) {
        case (.boolean, .bool(let on)): gtk_switch_set_active(OpaquePointer(widget), on ? 1 : 0)
        case (.integer, .number(let text)), (.number, .number(let text)):
            gtk_spin_button_set_value(OpaquePointer(widget), Double(text) ?? 0)
        case (.string, .string(let text)): gtk_editable_set_text(OpaquePointer(widget), text)
        case (.choice(let choices), .string(let text)):
            gtk_drop_down_set_selected(OpaquePointer(widget), UInt32(choices.firstIndex(of: text) ?? 0))
        default:
            if value != shape.zero { show(shape.zero) }
        }
    }
}

/// Whether the JSON number texts `a` and `b` are the same number, exactly (`1e2` and `100`,
/// `0.90` and `0.9`; not `1e-400` and `0.00`).
func sameNumber(_ a: String, _ b: String) -> Bool {
    guard let x = exactDecimal(a), let y = exactDecimal(b) else { return false }
    return x.negative == y.negative && x.digits == y.digits && x.exponent == y.exponent
}

/// A JSON number text as its sign, significant digits and power of ten (zero as one form);
/// `nil` for no number.
private func exactDecimal(_ text: String) -> (negative: Bool, digits: String, exponent: Int)? {
    var rest = Substring(text)
    let negative = rest.first == "-"
    if negative || rest.first == "+" { rest = rest.dropFirst() }
    var exponent = 0
    if let e = rest.firstIndex(where: { $0 == "e" || $0 == "E" }) {
        guard let power = Int(rest[rest.index(after: e)...]) else { return nil }
        exponent = power
        rest = rest[..<e]
    }
    var digits = ""
    var seenPoint = false
    for character in rest {
        if character == "." {
            seenPoint = true
        } else if character.isASCII, character.isNumber {
            digits.append(character)
            if seenPoint { exponent -= 1 }
        } else {
            return nil
        }
    }
    while digits.first == "0" { digits.removeFirst() }
    guard !digits.isEmpty else { return (false, "", 0) }
    while digits.last == "0" {
        digits.removeLast()
        exponent += 1
    }
    return (negative, digits, exponent)
}

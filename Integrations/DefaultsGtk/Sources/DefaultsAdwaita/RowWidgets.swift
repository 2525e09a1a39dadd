import CAdw
import DefaultsGtk
import Foundation

// The widgets of each kind of row, made for `PreferencesRow`'s factories, and the names and steps
// they show.

/// A case's name in words: `highContrast` → "High contrast", `solarized` → "Solarized".
public func readableName(_ identifier: String) -> String {
    var words = ""
    for character in identifier {
        if character.isUppercase, !words.isEmpty {
            words += " " + character.lowercased()
        } else {
            words.append(character)
        }
    }
    return words.prefix(1).uppercased() + words.dropFirst()
}

/// How a list of choices shows `choices`: by readable names (`compactList` as "Compact list")
/// when each is an identifier that starts with a lowercase letter and no two names are alike;
/// otherwise as they are (`"a"` and `"A"`, `"dark mode"`), with what would hide or reorder text
/// escaped.
func choiceNames(_ choices: [String]) -> [String] {
    let identifiers = choices.allSatisfy { choice in
        guard let first = choice.unicodeScalars.first, ("a"..."z").contains(first) else { return false }
        return choice.unicodeScalars.allSatisfy {
            ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0)
        }
    }
    let names = choices.map(readableName)
    // Shown as they are, but for what would hide or reorder them, or pass for another choice
    // (a NUL, U+202E, a zero-width or no-break space): escaped.
    guard identifiers, Set(names.map { $0.lowercased() }).count == names.count else { return choices.map(visible) }
    return names
}

/// The step of a floating-point spin button over a range `width` wide (`nil`: none), and the
/// digits it needs: a power of ten near a hundredth of the width.
func floatingStep(_ width: Double?) -> (step: Double, digits: UInt32) {
    guard let width, width > 0 else { return (0.1, 2) }
    let exponent = (log10(width / 100)).rounded(.down)
    return (pow(10, exponent), UInt32(max(0, -exponent)))
}

@MainActor
func actionRow(_ title: String, _ subtitle: String?) -> Widget {
    let row = adw_action_row_new()!
    // Text, not Pango markup: a summary with "&" or JSON with "<" shows as it is.
    adw_preferences_row_set_use_markup(typed(row), 0)
    adw_preferences_row_set_title(typed(row), title)
    if let subtitle { adw_action_row_set_subtitle(typed(row), subtitle) }
    return row
}

@MainActor
func comboRow(
    _ title: String,
    _ subtitle: String?,
    names: [String],
    bind: (Widget) -> Void
) -> (row: Widget, editor: Widget?, kind: PreferencesRow.Kind) {
    let row = adw_combo_row_new()!
    adw_preferences_row_set_use_markup(typed(row), 0)
    adw_preferences_row_set_title(typed(row), title)
    if let subtitle { adw_action_row_set_subtitle(typed(row), subtitle) }
    let strings = names.map { strdup($0) } + [nil]
    defer { for string in strings { free(string) } }
    let model = strings.withUnsafeBufferPointer { buffer in
        buffer.baseAddress!
            .withMemoryRebound(to: UnsafePointer<CChar>?.self, capacity: buffer.count) {
                gtk_string_list_new($0)!
            }
    }
    adw_combo_row_set_model(typed(row), model)
    g_object_unref(UnsafeMutableRawPointer(model))
    bind(row)
    return (row, row, .choice)
}

@MainActor
func entryRow(_ title: String, _ subtitle: String?) -> Widget {
    let row = adw_entry_row_new()!
    adw_preferences_row_set_use_markup(typed(row), 0)
    adw_preferences_row_set_title(typed(row), title)
    if let subtitle { gtk_widget_set_tooltip_text(row, subtitle) }
    return row
}

@MainActor
func spinRow(
    _ title: String,
    _ subtitle: String?,
    bounds: (Double, Double),
    step: Double,
    digits: UInt32,
    bind: (Widget) -> Void
) -> (row: Widget, editor: Widget?, kind: PreferencesRow.Kind) {
    let row = actionRow(title, subtitle)
    let spin = gtk_spin_button_new_with_range(bounds.0, bounds.1, step)!
    gtk_spin_button_set_digits(OpaquePointer(spin), digits)
    // As wide as the widest bound needs, up to 8 characters: wider values scroll in the entry.
    let widest = [bounds.0, bounds.1].map { String(format: "%.\(digits)f", $0).count }.max()!
    gtk_editable_set_width_chars(OpaquePointer(spin), Int32(min(widest, 8)))
    gtk_widget_set_valign(spin, GTK_ALIGN_CENTER)
    adw_action_row_add_suffix(typed(row), spin)
    bind(spin)
    return (row, spin, .number)
}

/// A widget as the GTK or libadwaita type a function takes.
func typed<Typed>(_ widget: Widget) -> UnsafeMutablePointer<Typed> {
    UnsafeMutableRawPointer(widget).assumingMemoryBound(to: Typed.self)
}

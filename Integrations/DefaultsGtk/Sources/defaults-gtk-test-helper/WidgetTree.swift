import CAdw
import DefaultsAdwaita
import DefaultsGtk
import DefaultsObservation
import Foundation

// Finding and reading the widgets of a window as its tests need: what is shown, each editor under
// a row, the text each holds; and setting one as a person would.

/// Whether `widget` is shown once the window is drawn next: it and every widget above it are
/// visible, and none is a stack's page that is not the one shown.
@MainActor
func isShown(_ widget: Widget) -> Bool {
    var current: Widget? = widget
    while let next = current {
        if gtk_widget_get_visible(next) == 0 || gtk_widget_get_child_visible(next) == 0 { return false }
        current = gtk_widget_get_parent(next)
    }
    return true
}

/// `widget` and every widget beneath it, in order.
@MainActor
func widgets(under widget: Widget) -> [Widget] {
    var found: [Widget] = []
    walk(widget) { found.append($0) }
    return found
}

/// The widgets beneath `widget` that edit a value: spin buttons, entries (not a spin button's
/// own), drop-downs and switches.
@MainActor
func editors(under widget: Widget) -> [Widget] {
    var found: [Widget] = []
    walk(widget) { child in
        let isEntry = cadw_is_entry(child) != 0 && gtk_widget_get_ancestor(child, gtk_spin_button_get_type()) == nil
        if cadw_is_spin_button(child) != 0 || isEntry || cadw_is_drop_down(child) != 0 || cadw_is_switch(child) != 0 {
            found.append(child)
        }
    }
    return found
}

/// The rows of an expander row's elements (titled by their number), in order.
@MainActor
func elementRows(of expander: Widget) -> [Widget] {
    widgets(under: expander).filter { $0 != expander && cadw_is_preferences_row($0) != 0 && Int(title(of: $0)) != nil }
}

/// The rows of an expander row's members.
@MainActor
func memberRows(of expander: Widget) -> [Widget] {
    // NB: not the expander's own header, a row of the same title.
    widgets(under: expander)
        .filter {
            $0 != expander && cadw_is_preferences_row($0) != 0 && title(of: $0) != title(of: expander)
        }
}

@MainActor
func title(of row: Widget) -> String {
    String(cString: adw_preferences_row_get_title(typed(row))).replacingOccurrences(of: " ", with: "_")
}

@MainActor
func tooltip(_ widget: Widget) -> String? {
    gtk_widget_get_tooltip_text(widget).map { String(cString: $0) }
}

/// What an editing widget shows, as a word.
@MainActor
func widgetText(_ widget: Widget) -> String {
    if cadw_is_spin_button(widget) != 0 { return "\(gtk_spin_button_get_value(OpaquePointer(widget)))" }
    if cadw_is_switch(widget) != 0 { return gtk_switch_get_active(OpaquePointer(widget)) != 0 ? "true" : "false" }
    if cadw_is_drop_down(widget) != 0 { return "\(gtk_drop_down_get_selected(OpaquePointer(widget)))" }
    return String(cString: gtk_editable_get_text(OpaquePointer(widget))).replacingOccurrences(of: " ", with: "_")
}

/// Sets an editing widget as a person would: a spin button's value, an entry's text, a
/// drop-down's selected index, a switch's state.
@MainActor
func setWidget(_ widget: Widget, _ value: String) {
    if cadw_is_spin_button(widget) != 0 {
        gtk_spin_button_set_value(OpaquePointer(widget), Double(value) ?? 0)
    } else if cadw_is_switch(widget) != 0 {
        gtk_switch_set_active(OpaquePointer(widget), value == "true" ? 1 : 0)
    } else if cadw_is_drop_down(widget) != 0 {
        gtk_drop_down_set_selected(OpaquePointer(widget), UInt32(value) ?? 0)
    } else {
        gtk_editable_set_text(OpaquePointer(widget), value == "\"\"" ? "" : value)
    }
}

/// Calls `body` with `widget` and each widget beneath it.
@MainActor
func walk(_ widget: Widget, _ body: (Widget) -> Void) {
    body(widget)
    var child = gtk_widget_get_first_child(widget)
    while let next = child {
        walk(next, body)
        child = gtk_widget_get_next_sibling(next)
    }
}

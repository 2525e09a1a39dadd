import CAdw
import DefaultsGtk
import DefaultsObservation
import Foundation

/// A group of rows under a heading, with a "Reset all" button for its keys.
@MainActor
public struct PreferencesGroup {
    /// The heading.
    public let title: String
    /// A line under the heading.
    public let description: String?
    /// The rows, in order.
    public let rows: [PreferencesRow]

    /// A group of `rows` under `title`.
    ///
    /// ```swift
    /// PreferencesGroup("Editor", [.row(.fontSize), .row(.showLineNumbers), .row(.theme)])
    /// ```
    ///
    /// - Parameters:
    ///   - title: The heading.
    ///   - description: A line under the heading.
    ///   - rows: The rows, in order.
    public init(_ title: String, description: String? = nil, _ rows: [PreferencesRow]) {
        self.title = title
        self.description = description
        self.rows = rows
    }
}

/// The widgets of one row of a page, for a program that adds to them (and for tests).
///
/// Valid while the window lives.
@MainActor
public struct PreferencesRowWidgets {
    /// The key's name.
    public let keyName: String
    /// The kind of row.
    public let kind: PreferencesRow.Kind
    /// The row (an `AdwActionRow`, `AdwComboRow` or `AdwEntryRow`).
    public let row: Widget
    /// The widget bound to the key: the switch, the spin button, or the row itself for a combo or
    /// entry row; `nil` for a read-only row.
    public let editor: Widget?
    /// The reset button, shown while the user's settings hold the key.
    public let resetButton: Widget
    /// The icon shown while a system file locks the key or this run overrides it; its tooltip
    /// says which.
    public let statusIcon: Widget

    /// The row shown in place of ``row`` while the stored value breaks the key's schema.
    ///
    /// On a page made from a schema: the stored JSON, the rule it breaks, what the program reads
    /// instead, and a button that resets the key. `nil` until a stored value first breaks it.
    public var problemRow: Widget? {
        g_object_get_data(
            UnsafeMutableRawPointer(row).assumingMemoryBound(to: GObject.self),
            "defaults-problem-row"
        )?
        .assumingMemoryBound(to: GtkWidget.self)
    }

    /// The row shown in place of ``row`` while its editor cannot show the stored value exactly.
    ///
    /// On a page made from a schema: an entry row of the value's JSON text (a number past what a
    /// spin button holds, text with a NUL character), which says why in its tooltip. `nil` until
    /// a stored value first needs it.
    public var alternateRow: Widget? {
        g_object_get_data(
            UnsafeMutableRawPointer(row).assumingMemoryBound(to: GObject.self),
            "defaults-alternate-row"
        )?
        .assumingMemoryBound(to: GtkWidget.self)
    }
}

/// A page of a preferences window (an `AdwPreferencesPage`) made from groups of keys' rows.
///
/// Put it in ``PreferencesWindow``, or in a window of your own. It makes at once only the rows a
/// first screen shows; the rest, a few at a time while the main loop is idle, once the page is
/// first drawn (see ``isComplete``).
@MainActor
public final class PreferencesPage {
    /// The `AdwPreferencesPage`.
    public let page: Widget
    /// Each row's widgets, in order (made now, if the page had not made them all yet).
    public var rows: [PreferencesRowWidgets] {
        made.makeAll()
        return made.made
    }
    /// Whether every row is made.
    ///
    /// A page makes at once only the rows a first screen shows; it makes the rest a few at a
    /// time while the main loop is idle, from its first frame on (a ``PreferencesWindow``'s
    /// other pages too, so its search finds every key). ``rows`` and ``row(named:)`` make the
    /// rest first.
    public var isComplete: Bool { made.isComplete }
    private let made: PageRows
    /// Each group's "Reset all" button, in order.
    public private(set) var resetAllButtons: [Widget] = []

    /// Makes the page.
    ///
    /// - Parameters:
    ///   - title: The page's title, shown when a window has more than one page.
    ///   - iconName: The page's icon, by its icon-theme name.
    ///   - groups: The groups, in order.
    public init(title: String = "General", iconName: String? = nil, groups: [PreferencesGroup]) {
        adw_init()
        GLibMainLoop.driveMainActor()
        page = adw_preferences_page_new()!
        made = PageRows(page: page)
        adw_preferences_page_set_title(typed(page), title)
        if let iconName { adw_preferences_page_set_icon_name(typed(page), iconName) }
        for group in groups { add(group) }
    }

    /// The widgets of the row of the key named `name` (made now, if it was not yet).
    public func row(named name: String) -> PreferencesRowWidgets? {
        rows.first { $0.keyName == name }
    }

    /// Starts making the rows not made yet, a few at a time while the main loop is idle.
    ///
    /// A page starts so once it is first drawn, and a ``PreferencesWindow`` starts all its pages
    /// once it is; call this for a page of a window of your own that is not shown at first (a
    /// stack's other page), so that a search over that window finds its keys.
    public func makeRestWhenIdle() { made.makeRestWhenIdle() }

    /// Makes the rows left once `widget` is next drawn.
    func makeRestAfterPaint(of widget: Widget) { made.makeRestAfterPaint(of: widget) }

    /// Adds `row` at the end of the group at `index` (in the order the groups were added), and to
    /// what its "Reset all" resets: made now if the page has made all its rows, else after them.
    func append(_ row: PreferencesRow, toGroupAt index: Int) {
        groups[index].keys.add(row)
        made.append(row, to: groups[index].box)
    }

    /// Adds `group` after the others; returns its index.
    @discardableResult
    func append(_ group: PreferencesGroup) -> Int {
        add(group)
        return groups.count - 1
    }

    /// What lives as long as this page (what follows the suite for it).
    var kept: [AnyObject] = []

    /// Each group's box and the keys its "Reset all" resets, in order.
    private var groups: [(box: Widget, keys: GroupKeys)] = []

    private func add(_ group: PreferencesGroup) {
        let box = adw_preferences_group_new()!
        adw_preferences_group_set_title(typed(box), group.title)
        if let description = group.description { adw_preferences_group_set_description(typed(box), description) }
        let resetAll = gtk_button_new_with_label("Reset all")!
        gtk_widget_add_css_class(resetAll, "flat")
        gtk_widget_set_valign(resetAll, GTK_ALIGN_CENTER)
        adw_preferences_group_set_header_suffix(typed(box), resetAll)
        let keys = GroupKeys()
        for row in group.rows { keys.add(row) }
        connect(
            resetAll,
            "clicked",
            RowController.Handler {
                // One reset of each suite's keys: one write, one change.
                for each in keys.names.values {
                    // A locked key's value in the user's file stays: a reset of it would be refused.
                    let unlocked = each.names.filter { name in
                        if case .locked = each.suite.source(ofValueNamed: name) { return false }
                        return true
                    }
                    Defaults.reset(unlocked, suite: each.suite)
                }
            }
        )
        resetAllButtons.append(resetAll)
        groups.append((box, keys))
        for row in group.rows { made.add(row, to: box) }
        adw_preferences_page_add(typed(page), typed(box))
    }
}

/// The keys a group's "Reset all" resets, by suite.
@MainActor
private final class GroupKeys {
    var names: [ObjectIdentifier: (suite: Defaults.Suite, names: [String])] = [:]

    func add(_ row: PreferencesRow) {
        names[ObjectIdentifier(row.suite), default: (row.suite, [])].names.append(row.keyName)
    }
}

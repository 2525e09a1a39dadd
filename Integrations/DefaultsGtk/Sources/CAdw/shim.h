// libadwaita 1.2 for Swift (with GTK 4 and GLib, which it includes): the preferences window, its
// pages, groups and rows. A module of its own, so programs that use DefaultsGtk alone do not need
// libadwaita.
#include <adwaita.h>
// GSettings' keyfile backend, for comparisons with GSettings that need no session bus.
#define G_SETTINGS_ENABLE_BACKEND
#include <gio/gsettingsbackend.h>

/// g_signal_connect, which is a macro: connects `handler` to `signal` of `instance`.
static inline gulong cadw_connect(gpointer instance, const char *signal, GCallback handler, gpointer data) {
    return g_signal_connect_data(instance, signal, handler, data, NULL, (GConnectFlags)0);
}

/// Emits "clicked" on `button` at once, as a click would (gtk_widget_activate clicks a moment later).
static inline void cadw_click(GtkWidget *button) { g_signal_emit_by_name(button, "clicked"); }

/// Whether `widget` is a row of a preferences window (an AdwPreferencesRow or a subclass).
static inline gboolean cadw_is_preferences_row(gpointer widget) { return ADW_IS_PREFERENCES_ROW(widget); }

/// Whether `widget` is a GtkSearchEntry.
static inline gboolean cadw_is_search_entry(gpointer widget) { return GTK_IS_SEARCH_ENTRY(widget); }

/// Whether `widget` is a GtkSwitch, a GtkSpinButton, a GtkEntry, a GtkDropDown, a GtkButton.
static inline gboolean cadw_is_switch(gpointer widget) { return GTK_IS_SWITCH(widget); }
static inline gboolean cadw_is_spin_button(gpointer widget) { return GTK_IS_SPIN_BUTTON(widget); }
static inline gboolean cadw_is_entry(gpointer widget) { return GTK_IS_ENTRY(widget); }
static inline gboolean cadw_is_drop_down(gpointer widget) { return GTK_IS_DROP_DOWN(widget); }
static inline gboolean cadw_is_button(gpointer widget) { return GTK_IS_BUTTON(widget); }

/// Emits `signal` (one without arguments) on `widget`, as the person's action would.
static inline void cadw_emit(gpointer widget, const char *signal) { g_signal_emit_by_name(widget, signal); }

/// Whether `widget` is a GtkToggleButton.
static inline gboolean cadw_is_toggle_button(gpointer widget) { return GTK_IS_TOGGLE_BUTTON(widget); }

// cgtk_save_png: a picture of a drawn window, for self-tests (the one CGtk has too).
#include "../CGtk/picture.h"

/// Turns GTK's animations on or off for the whole program (GtkSettings' gtk-enable-animations):
/// off, a stack shows its new page and an entry row its title at once, as a picture wants them.
static inline void cadw_set_animations(gboolean enabled) {
    g_object_set(gtk_settings_get_default(), "gtk-enable-animations", enabled, NULL);
}

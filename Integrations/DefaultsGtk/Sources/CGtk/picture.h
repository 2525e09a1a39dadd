// Pictures of windows, for self-tests; included by the shims of CGtk and CAdw (each sees GTK's
// headers through its own), so the one function serves both.
#ifndef CGTK_PICTURE_H
#define CGTK_PICTURE_H
#include <gtk/gtk.h>

/// Renders `widget` (a realized, drawn window) to a PNG at `path`, through GTK's own renderer, with
/// no screen capture. Returns whether the file was written.
static inline gboolean cgtk_save_png(GtkWidget *widget, const char *path) {
    int width = gtk_widget_get_width(widget);
    int height = gtk_widget_get_height(widget);
    GskRenderer *renderer = gtk_native_get_renderer(GTK_NATIVE(widget));
    if (width <= 0 || height <= 0 || renderer == NULL) return FALSE;
    GdkPaintable *paintable = gtk_widget_paintable_new(widget);
    GtkSnapshot *snapshot = gtk_snapshot_new();
    gdk_paintable_snapshot(paintable, snapshot, width, height);
    GskRenderNode *node = gtk_snapshot_free_to_node(snapshot);
    gboolean saved = FALSE;
    if (node != NULL) {
        GdkTexture *texture = gsk_renderer_render_texture(renderer, node, NULL);
        saved = gdk_texture_save_to_png(texture, path);
        g_object_unref(texture);
        gsk_render_node_unref(node);
    }
    g_object_unref(paintable);
    return saved;
}

#endif

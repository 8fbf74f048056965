// The network panel: the layer list (add any kind, remove, duplicate, move, drag to reorder) above the
// selected layer's parameter editor and formula, under the network's description (what it is, how it was
// trained and how well). Its actions are shared with the window's Layer menu.
#pragma once

#include "gui/document/network_document.h"

#include <QMap>
#include <QWidget>

class QAction;
class QLabel;
class QListView;
class QMenu;

namespace convscope::gui {

class LayerEditor;
class LayerListModel;

class NetworkPanel : public QWidget {
    Q_OBJECT
public:
    explicit NetworkPanel(NetworkDocument* doc, QWidget* parent = nullptr);

    int currentLayer() const;
    void setCurrentLayer(int index);
    QAction* addLayerAction(const QString& typeName) const { return m_addActions.value(typeName); }
    QList<QAction*> editActions() const; // remove, duplicate, up, down
    QMenu* addMenu() const { return m_addMenu; }
    QAction* removeAction() const { return m_remove; }
    QAction* duplicateAction() const { return m_duplicate; }
    QAction* moveUpAction() const { return m_up; }
    QAction* moveDownAction() const { return m_down; }
    LayerListModel* model() const { return m_model; }
    LayerEditor* editor() const { return m_editor; }
    QListView* view() const { return m_view; }
    // The network's description from its file (first line; the whole text as the tooltip); hidden when empty.
    QString aboutText() const;

Q_SIGNALS:
    void currentLayerChanged(int index);

private:
    void updateActions();

    NetworkDocument* m_doc;
    LayerListModel* m_model;
    QListView* m_view;
    LayerEditor* m_editor;
    QMenu* m_addMenu;
    QMap<QString, QAction*> m_addActions;
    QAction* m_remove;
    QAction* m_duplicate;
    QAction* m_up;
    QAction* m_down;
    int m_lastCurrent = -1; // survives a model reset
    QLabel* m_refusal = nullptr;
    QLabel* m_about = nullptr;
};

} // namespace convscope::gui

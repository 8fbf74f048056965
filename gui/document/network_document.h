// The document a user edits: one Network, its undo stack, its file and the shape report of its current
// state. Every edit is a whole-Network snapshot pushed on the QUndoStack (a Network is a cheap value:
// materialised tensors are shared), so undo and redo restore the network exactly, whatever the edit was.
#pragma once

#include "compute/network.h"
#include "compute/shape_inference.h"

#include <QObject>
#include <QString>
#include <QUndoStack>

namespace convscope::gui {

class NetworkDocument : public QObject {
    Q_OBJECT
public:
    explicit NetworkDocument(QObject* parent = nullptr);
    ~NetworkDocument() override;

    const Network& network() const { return m_network; }
    const ShapeReport& shapes() const { return m_shapes; }
    QUndoStack* undoStack() { return &m_undo; }

    // Pushes an undoable edit. `selectAfter` is the layer to select once it is applied (-1: keep).
    // Edits with the same non-empty `mergeKey` in a row collapse into one undo step (spin-box scrolling).
    // An edit that would leave a layer reading a name that is not above it (a move past its source, an input
    // picked from below) is refused: nothing is pushed, editRefused says why, and false is returned.
    bool apply(const Network& after, const QString& text, int selectAfter = -1, const QString& mergeKey = {},
        int selectBefore = -1);

    // Convenience edits, all undoable. Renaming a layer (setLayer with a new name) renames it in every layer
    // that reads it, in the same undo step; a name already used, "input" or empty is refused. Removing a layer
    // that others read by name is refused, naming them.
    bool setLayer(int index, const Layer& layer, const QString& text, const QString& mergeKey = {});
    void insertLayer(int index, Layer layer); // name made unique when empty or taken
    bool removeLayer(int index);
    void duplicateLayer(int index);
    bool moveLayer(int from, int to); // `to` is the final index of the moved layer
    void setInput(const InputSpec& input, const QString& text, const QString& mergeKey = {});
    void setNetworkName(const QString& name);

    // Replaces the whole document (New, Open): clears the undo history and marks it clean.
    void reset(Network net, const QString& filePath);
    QString filePath() const { return m_filePath; }
    void setFilePath(const QString& path);
    bool isModified() const { return !m_undo.isClean(); }
    void markSaved() { m_undo.setClean(); }

    // Used by the undo commands only.
    void setNetworkFromUndo(const Network& net, int select);

Q_SIGNALS:
    // reset() is about to replace the whole network (New, Open): every view of the previous one is cleared.
    void replacing();
    // The network changed; the shape report is already up to date. `select` is a layer the views
    // should select (-1: keep the current one).
    void networkChanged(int select);
    void filePathChanged(const QString& path);
    void modifiedChanged(bool modified);
    // An edit was refused; `message` says why and what to do (shown by the layer list and the editor).
    void editRefused(const QString& message);

private:
    void setNetworkInternal(const Network& net, int select);
    bool refuse(const QString& message);

    Network m_network;
    ShapeReport m_shapes;
    QUndoStack m_undo;
    QString m_filePath;
};

QString uniqueLayerName(const Network& net, const LayerSpec& spec, const std::string& wanted);

} // namespace convscope::gui

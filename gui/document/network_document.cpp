#include "gui/document/network_document.h"

#include <QUndoCommand>

#include <algorithm>
#include <set>

namespace convscope::gui {

namespace {

    class SnapshotCommand : public QUndoCommand {
    public:
        SnapshotCommand(NetworkDocument* doc, Network before, Network after, const QString& text, int selectBefore,
            int selectAfter, int mergeId)
            : QUndoCommand(text)
            , m_doc(doc)
            , m_before(std::move(before))
            , m_after(std::move(after))
            , m_selectBefore(selectBefore)
            , m_selectAfter(selectAfter)
            , m_mergeId(mergeId)
        {
        }
        void undo() override { m_doc->setNetworkFromUndo(m_before, m_selectBefore); }
        void redo() override { m_doc->setNetworkFromUndo(m_after, m_selectAfter); }
        int id() const override { return m_mergeId; }
        bool mergeWith(const QUndoCommand* other) override
        {
            if (other->id() != id() || m_mergeId < 0)
                return false;
            auto* o = static_cast<const SnapshotCommand*>(other);
            m_after = o->m_after;
            m_selectAfter = o->m_selectAfter;
            return true;
        }

    private:
        NetworkDocument* m_doc;
        Network m_before, m_after;
        int m_selectBefore, m_selectAfter;
        int m_mergeId;
    };

    // Merge ids are small integers per distinct key; -1 never merges.
    int mergeIdFor(const QString& key)
    {
        static QStringList keys;
        if (key.isEmpty())
            return -1;
        int i = keys.indexOf(key);
        if (i < 0) {
            keys.append(key);
            i = keys.size() - 1;
        }
        return 1000 + i;
    }

} // namespace

QString uniqueLayerName(const Network& net, const LayerSpec& spec, const std::string& wanted)
{
    std::set<std::string> taken;
    for (const Layer& l : net.layers)
        taken.insert(l.name);
    if (!wanted.empty() && !taken.count(wanted))
        return QString::fromStdString(wanted);
    if (wanted.empty())
        return QString::fromStdString(defaultLayerName(net, spec));
    for (int i = 2;; ++i) {
        std::string candidate = wanted + "_" + std::to_string(i);
        if (!taken.count(candidate))
            return QString::fromStdString(candidate);
    }
}

NetworkDocument::NetworkDocument(QObject* parent)
    : QObject(parent)
{
    m_shapes = inferShapes(m_network);
    connect(&m_undo, &QUndoStack::cleanChanged, this, [this](bool clean) { Q_EMIT modifiedChanged(!clean); });
}

// ~QUndoStack emits cleanChanged when the document was modified; by then m_filePath and m_network are gone, and a
// slot reading them (MainWindow::updateTitle) read freed memory (found by ASan in the gui tests). Silence first.
NetworkDocument::~NetworkDocument()
{
    disconnect(&m_undo, nullptr, this, nullptr);
    blockSignals(true);
}

bool NetworkDocument::refuse(const QString& message)
{
    Q_EMIT editRefused(message);
    return false;
}

bool NetworkDocument::apply(
    const Network& after, const QString& text, int selectAfter, const QString& mergeKey, int selectBefore)
{
    if (after.sameDescription(m_network) && after.name == m_network.name)
        return true;
    try {
        resolveInputs(after);
    } catch (const std::exception& e) {
        return refuse(tr("%1 refused: %2").arg(text, QString::fromStdString(e.what())));
    }
    // The command's redo() applies `after` as it is pushed.
    m_undo.push(new SnapshotCommand(this, m_network, after, text, selectBefore, selectAfter, mergeIdFor(mergeKey)));
    return true;
}

bool NetworkDocument::setLayer(int index, const Layer& layer, const QString& text, const QString& mergeKey)
{
    if (index < 0 || index >= int(m_network.layers.size()))
        return false;
    Network net = m_network;
    Layer& target = net.layers[size_t(index)];
    const std::string oldName = target.name;
    if (layer.name != oldName) {
        const QString wanted = QString::fromStdString(layer.name);
        if (layer.name.empty())
            return refuse(tr("A layer needs a name."));
        if (layer.name == kNetworkInputName)
            return refuse(tr("\"input\" names the network's input in a layer's inputs; choose another name."));
        for (const Layer& other : net.layers)
            if (other.name == layer.name)
                return refuse(tr("Cannot rename %1 to %2: another layer is called %2.")
                                  .arg(QString::fromStdString(oldName), wanted));
    }
    const bool changed = !target.sameDescription(layer);
    target = layer;
    // Parameters follow the description: drop the materialised tensors of an edited layer.
    if (changed)
        target.weight = target.bias = target.runningMean = target.runningVar = nullptr;
    // A rename follows into every layer that reads the old name, in the same undo step.
    if (layer.name != oldName)
        for (Layer& other : net.layers)
            std::replace(other.inputs.begin(), other.inputs.end(), oldName, layer.name);
    return apply(net, text, index, mergeKey.isEmpty() ? QString() : mergeKey + QString::number(index), index);
}

void NetworkDocument::insertLayer(int index, Layer layer)
{
    Network net = m_network;
    index = std::clamp(index, 0, int(net.layers.size()));
    layer.name = uniqueLayerName(net, layer.spec, layer.name).toStdString();
    const QString text = tr("Add %1").arg(QString::fromStdString(layerTypeName(layer.spec)));
    net.layers.insert(net.layers.begin() + index, std::move(layer));
    apply(net, text, index);
}

bool NetworkDocument::removeLayer(int index)
{
    if (index < 0 || index >= int(m_network.layers.size()))
        return false;
    Network net = m_network;
    const std::string name = net.layers[size_t(index)].name;
    QStringList readers;
    for (const Layer& other : net.layers)
        if (std::find(other.inputs.begin(), other.inputs.end(), name) != other.inputs.end())
            readers.append(QString::fromStdString(other.name));
    if (!readers.isEmpty())
        return refuse(tr("Cannot remove %1: %2 %3 it. Change their inputs first.")
                          .arg(QString::fromStdString(name), readers.join(QStringLiteral(", ")),
                              readers.size() == 1 ? tr("reads") : tr("read")));
    const QString text = tr("Remove %1").arg(QString::fromStdString(name));
    net.layers.erase(net.layers.begin() + index);
    return apply(net, text, net.layers.empty() ? -1 : std::min(index, int(net.layers.size()) - 1), {}, index);
}

void NetworkDocument::duplicateLayer(int index)
{
    if (index < 0 || index >= int(m_network.layers.size()))
        return;
    Network net = m_network;
    Layer copy = net.layers[size_t(index)];
    copy.name = uniqueLayerName(net, copy.spec, copy.name).toStdString();
    const QString text = tr("Duplicate %1").arg(QString::fromStdString(net.layers[size_t(index)].name));
    net.layers.insert(net.layers.begin() + index + 1, std::move(copy));
    apply(net, text, index + 1, {}, index);
}

bool NetworkDocument::moveLayer(int from, int to)
{
    const int n = int(m_network.layers.size());
    if (from < 0 || from >= n || to < 0 || to >= n || from == to)
        return false;
    Network net = m_network;
    Layer moved = std::move(net.layers[size_t(from)]);
    net.layers.erase(net.layers.begin() + from);
    net.layers.insert(net.layers.begin() + to, std::move(moved));
    return apply(net, tr("Move %1").arg(QString::fromStdString(net.layers[size_t(to)].name)), to, {}, from);
}

void NetworkDocument::setInput(const InputSpec& input, const QString& text, const QString& mergeKey)
{
    Network net = m_network;
    net.input = input;
    apply(net, text, -1, mergeKey);
}

void NetworkDocument::setNetworkName(const QString& name)
{
    Network net = m_network;
    net.name = name.toStdString();
    apply(net, tr("Rename network"), -1, QStringLiteral("network-name"));
}

void NetworkDocument::reset(Network net, const QString& filePath)
{
    Q_EMIT replacing();
    m_undo.clear();
    setNetworkInternal(net, net.layers.empty() ? -1 : 0);
    m_undo.setClean();
    setFilePath(filePath);
    Q_EMIT modifiedChanged(false);
}

void NetworkDocument::setFilePath(const QString& path)
{
    if (path == m_filePath)
        return;
    m_filePath = path;
    Q_EMIT filePathChanged(path);
}

void NetworkDocument::setNetworkFromUndo(const Network& net, int select) { setNetworkInternal(net, select); }

void NetworkDocument::setNetworkInternal(const Network& net, int select)
{
    m_network = net;
    m_shapes = inferShapes(m_network);
    Q_EMIT networkChanged(select);
}

} // namespace convscope::gui

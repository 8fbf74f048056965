#include "gui/app/project_controller.h"

#include "compute/error.h"
#include "compute/network_json.h"
#include "compute/network_weights.h"
#include "compute/onnx_model.h"
#include "compute/runtime_paths.h"
#include "convscope_config.h"

#include <QAction>
#include <QCoreApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QMenu>
#include <QMessageBox>
#include <QSaveFile>
#include <QSettings>
#include <QStyle>
#include <QWidget>

namespace convscope::gui {

namespace {
    constexpr int kMaxRecent = 8;
    const QString kRecentKey = QStringLiteral("recentFiles");
} // namespace

ProjectController::ProjectController(NetworkDocument* doc, QWidget* window)
    : QObject(window)
    , m_doc(doc)
    , m_window(window)
{
    QStyle* style = window->style();
    m_new = new QAction(style->standardIcon(QStyle::SP_FileIcon), tr("&New"), this);
    m_new->setShortcut(QKeySequence::New);
    m_open = new QAction(style->standardIcon(QStyle::SP_DialogOpenButton), tr("&Open…"), this);
    m_open->setShortcut(QKeySequence::Open);
    m_save = new QAction(style->standardIcon(QStyle::SP_DialogSaveButton), tr("&Save"), this);
    m_save->setShortcut(QKeySequence::Save);
    m_saveAs = new QAction(tr("Save &As…"), this);
    m_saveAs->setShortcut(QKeySequence::SaveAs);
    m_recent = new QMenu(tr("Open &Recent"), window);
    m_examples = new QMenu(tr("&Examples"), window);
    m_examples->setObjectName(QStringLiteral("examplesMenu"));

    connect(m_new, &QAction::triggered, this, &ProjectController::newNetwork);
    connect(m_open, &QAction::triggered, this, [this] {
        const QString dir = m_doc->filePath().isEmpty() ? QString() : QFileInfo(m_doc->filePath()).absolutePath();
        const QString path = QFileDialog::getOpenFileName(m_window, tr("Open network"), dir,
            tr("Networks and models (*.json *.onnx);;ConvScope networks (*.json);;ONNX models (*.onnx)"));
        if (!path.isEmpty())
            openFile(path);
    });
    connect(m_save, &QAction::triggered, this, &ProjectController::save);
    connect(m_saveAs, &QAction::triggered, this, &ProjectController::saveAs);
    rebuildRecentMenu();
    rebuildExamplesMenu();
}

QString ProjectController::examplesDir()
{
    // share/convscope/networks beside the program, installed or in the build tree (compute/runtime_paths.h).
    return QString::fromStdString(convscope::examplesDir().string());
}

bool ProjectController::maybeDiscard()
{
    if (!m_doc->isModified())
        return true;
    Answer a;
    if (m_ask) {
        a = m_ask();
    } else {
        const auto button = QMessageBox::warning(m_window, tr("Unsaved changes"),
            tr("The network \"%1\" has unsaved changes. Save them first?")
                .arg(QString::fromStdString(m_doc->network().name)),
            QMessageBox::Save | QMessageBox::Discard | QMessageBox::Cancel, QMessageBox::Save);
        a = button == QMessageBox::Save ? Answer::Save
                                        : (button == QMessageBox::Discard ? Answer::Discard : Answer::Cancel);
    }
    if (a == Answer::Save)
        return save();
    return a == Answer::Discard;
}

bool ProjectController::newNetwork()
{
    if (!maybeDiscard())
        return false;
    Network net;
    net.name = "untitled";
    m_doc->reset(std::move(net), QString());
    return true;
}

// An ONNX model carries no class names; a text file beside it may: MODEL.labels.txt, else labels.txt (one name per
// line, in output order, as torchvision's and Netron's examples ship them). Returns the file's name, or empty.
QString ProjectController::readLabelsBeside(const QString& model, std::vector<std::string>* labels)
{
    const QFileInfo info(model);
    for (const QString& name :
        { info.completeBaseName() + QStringLiteral(".labels.txt"), QStringLiteral("labels.txt") }) {
        QFile f(info.dir().filePath(name));
        if (!f.open(QIODevice::ReadOnly | QIODevice::Text))
            continue;
        labels->clear();
        while (!f.atEnd()) {
            const QString line = QString::fromUtf8(f.readLine()).trimmed();
            if (!line.isEmpty())
                labels->push_back(line.toStdString());
        }
        return name;
    }
    return {};
}

bool ProjectController::openFile(const QString& path)
{
    if (!maybeDiscard())
        return false;
    QElapsedTimer clock; // opening a 100 MB model must show its shapes within 2 s (issue 17): said in the status bar
    clock.start();
    Network net;
    try {
        net = loadNetwork(std::filesystem::path(path.toStdString()));
    } catch (const std::exception& e) {
        Q_EMIT problem(
            tr("Could not open %1: %2").arg(QDir::toNativeSeparators(path), QString::fromStdString(e.what())));
        return false;
    }
    // A bundled example opens as a new, unsaved copy: Save asks where, so the original stays as shipped. So does an
    // ONNX model: Save writes ConvScope JSON (weights as .npy beside it), never over the model.
    const bool example = QFileInfo(path).absolutePath() == QFileInfo(examplesDir()).absoluteFilePath();
    const bool imported = isOnnxFile(path.toStdString());
    QString labelsFrom;
    if (imported && net.labels.empty())
        labelsFrom = readLabelsBeside(path, &net.labels);
    m_doc->reset(std::move(net), example || imported ? QString() : QFileInfo(path).absoluteFilePath());
    if (!example)
        addRecent(QFileInfo(path).absoluteFilePath());
    Q_EMIT opened(path);
    Q_EMIT status(
        tr("Opened %1: %2 layers, shapes shown in %3 ms%4")
            .arg(QFileInfo(path).fileName())
            .arg(m_doc->network().layers.size())
            .arg(clock.elapsed())
            .arg(imported ? tr(" (an ONNX model: Save writes ConvScope JSON with the weights as .npy)") : QString())
        + (labelsFrom.isEmpty() ? QString() : tr("; class names from %1").arg(labelsFrom)));
    return true;
}

bool ProjectController::save()
{
    if (m_doc->filePath().isEmpty())
        return saveAs();
    return saveTo(m_doc->filePath());
}

bool ProjectController::saveAs()
{
    QString suggestion = m_doc->filePath();
    if (suggestion.isEmpty())
        suggestion = QString::fromStdString(m_doc->network().name).replace(QLatin1Char(' '), QLatin1Char('_'))
            + QStringLiteral(".json");
    const QString path
        = QFileDialog::getSaveFileName(m_window, tr("Save network"), suggestion, tr("ConvScope networks (*.json)"));
    if (path.isEmpty())
        return false;
    return saveTo(path);
}

bool ProjectController::saveTo(const QString& path)
{
    std::string text;
    try {
        // An imported model's weights go to .npy files beside the JSON first (each written atomically); the JSON,
        // which names them, replaces the old file last.
        text = serializeNetwork(externalizeWeights(m_doc->network(), path.toStdString()));
    } catch (const std::exception& e) {
        Q_EMIT problem(tr("Could not save: %1").arg(QString::fromStdString(e.what())));
        return false;
    }
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly) || file.write(text.data(), qint64(text.size())) != qint64(text.size())
        || !file.commit()) {
        Q_EMIT problem(tr("Could not save %1: %2").arg(QDir::toNativeSeparators(path), file.errorString()));
        return false;
    }
    m_doc->setFilePath(QFileInfo(path).absoluteFilePath());
    m_doc->markSaved();
    addRecent(QFileInfo(path).absoluteFilePath());
    return true;
}

QStringList ProjectController::recentFiles() const { return QSettings().value(kRecentKey).toStringList(); }

void ProjectController::addRecent(const QString& path)
{
    QStringList list = recentFiles();
    list.removeAll(path);
    list.prepend(path);
    while (list.size() > kMaxRecent)
        list.removeLast();
    QSettings().setValue(kRecentKey, list);
    rebuildRecentMenu();
}

void ProjectController::rebuildRecentMenu()
{
    m_recent->clear();
    const QStringList list = recentFiles();
    for (const QString& path : list) {
        auto* a = m_recent->addAction(QFileInfo(path).fileName());
        a->setToolTip(path);
        connect(a, &QAction::triggered, this, [this, path] { openFile(path); });
    }
    if (!list.isEmpty()) {
        m_recent->addSeparator();
        m_recent->addAction(tr("Clear list"), this, [this] {
            QSettings().remove(kRecentKey);
            rebuildRecentMenu();
        });
    }
    m_recent->setEnabled(!list.isEmpty());
}

void ProjectController::rebuildExamplesMenu()
{
    m_examples->clear();
    const QDir dir(examplesDir());
    const QStringList files = examplesDir().isEmpty()
        ? QStringList()
        : dir.entryList({ QStringLiteral("*.json") }, QDir::Files, QDir::Name);
    for (const QString& f : files) {
        const QString path = dir.absoluteFilePath(f);
        QString label = QFileInfo(f).completeBaseName().replace(QLatin1Char('_'), QLatin1Char(' '));
        auto* a = m_examples->addAction(label);
        a->setObjectName(QStringLiteral("example_") + QFileInfo(f).completeBaseName());
        a->setToolTip(path);
        connect(a, &QAction::triggered, this, [this, path] { openFile(path); });
    }
    if (files.isEmpty())
        m_examples->addAction(tr("(no examples found in %1)").arg(dir.path()))->setEnabled(false);
}

} // namespace convscope::gui

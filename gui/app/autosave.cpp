#include "gui/app/autosave.h"

#include "compute/error.h"
#include "compute/network_json.h"
#include "gui/document/network_document.h"

#include <QCoreApplication>
#include <QDateTime>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <QMessageBox>
#include <QSaveFile>
#include <QStandardPaths>
#include <QWidget>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <limits>

#include <signal.h>

namespace convscope::gui {

namespace {
    constexpr const char* kPrefix = "autosave-";

    bool processAlive(qint64 pid)
    {
        if (pid <= 0 || pid > std::numeric_limits<pid_t>::max())
            return false;
        return ::kill(pid_t(pid), 0) == 0 || errno == EPERM;
    }

    qint64 pidOf(const QString& file)
    {
        QString base = QFileInfo(file).completeBaseName();
        bool ok = false;
        const qint64 pid = base.mid(int(qstrlen(kPrefix))).toLongLong(&ok);
        return ok ? pid : -1;
    }
} // namespace

QString Autosave::folder()
{
    return QStandardPaths::writableLocation(QStandardPaths::AppDataLocation) + QStringLiteral("/autosave");
}

Autosave::Autosave(NetworkDocument* doc, QWidget* window)
    : QObject(window)
    , m_doc(doc)
    , m_window(window)
    , m_path(folder() + QLatin1Char('/') + QLatin1String(kPrefix) + QString::number(QCoreApplication::applicationPid())
          + QStringLiteral(".json"))
{
    setObjectName(QStringLiteral("autosave"));
    m_timer.setInterval(kDefaultIntervalMs);
    connect(&m_timer, &QTimer::timeout, this, [this] { saveNow(); });
    m_timer.start();
    connect(m_doc, &NetworkDocument::networkChanged, this, [this] { m_dirty = true; });
    connect(m_doc, &NetworkDocument::modifiedChanged, this, [this](bool modified) {
        if (!modified) { // saved (or reset to a file): the file on disk is the truth now
            m_dirty = false;
            discard();
        }
    });
}

Autosave::~Autosave() { discard(); }

bool Autosave::saveNow()
{
    if (!m_dirty || !m_doc->isModified())
        return true;
    QJsonObject o;
    o[QStringLiteral("convscope-autosave")] = 1;
    o[QStringLiteral("file")] = m_doc->filePath();
    o[QStringLiteral("saved")] = QDateTime::currentDateTimeUtc().toString(Qt::ISODate);
    o[QStringLiteral("pid")] = QCoreApplication::applicationPid();
    o[QStringLiteral("network")] = QString::fromStdString(serializeNetwork(m_doc->network()));
    QDir().mkpath(folder());
    QSaveFile file(m_path);
    if (!file.open(QIODevice::WriteOnly) || file.write(QJsonDocument(o).toJson()) < 0 || !file.commit()) {
        // Once per failure burst, not every few seconds: keep the flag so it is retried on the next tick.
        Q_EMIT problem(tr("Autosave failed: %1: %2").arg(m_path, file.errorString()));
        return false;
    }
    m_dirty = false;
    Q_EMIT saved(m_path);
    return true;
}

void Autosave::discard() { QFile::remove(m_path); }

QStringList Autosave::orphans()
{
    QDir dir(folder());
    QStringList out;
    const QFileInfoList files = dir.entryInfoList({ QLatin1String(kPrefix) + QStringLiteral("*.json") }, QDir::Files,
        QDir::Time); // newest first
    for (const QFileInfo& f : files)
        if (!processAlive(pidOf(f.filePath())) && pidOf(f.filePath()) != QCoreApplication::applicationPid())
            out << f.filePath();
    return out;
}

bool Autosave::offerRestore()
{
    bool restored = false;
    for (const QString& orphan : orphans()) {
        if (!restored) {
            QFile f(orphan);
            QJsonObject o;
            if (f.size() < (64 << 20) && f.open(QIODevice::ReadOnly))
                o = QJsonDocument::fromJson(f.readAll()).object();
            const QString original = o.value(QStringLiteral("file")).toString();
            const QString when = o.value(QStringLiteral("saved")).toString();
            bool yes = false;
            if (m_ask) {
                yes = m_ask(original, when);
            } else {
                const QString what = original.isEmpty() ? tr("an unsaved network") : QFileInfo(original).fileName();
                yes = QMessageBox::question(m_window, tr("Restore autosaved work?"),
                          tr("ConvScope did not close properly last time. Restore %1 as it was autosaved at %2?")
                              .arg(what, QDateTime::fromString(when, Qt::ISODate).toLocalTime().toString()),
                          QMessageBox::Yes | QMessageBox::No, QMessageBox::Yes)
                    == QMessageBox::Yes;
            }
            if (yes)
                restored = restoreFrom(orphan);
        }
        QFile::remove(orphan);
    }
    return restored;
}

bool Autosave::restoreFrom(const QString& autosaveFile)
{
    QFile f(autosaveFile);
    if (f.size() > (64 << 20) || !f.open(QIODevice::ReadOnly)) {
        Q_EMIT problem(tr("Cannot restore %1: %2").arg(autosaveFile, f.errorString()));
        return false;
    }
    const QJsonObject o = QJsonDocument::fromJson(f.readAll()).object();
    if (o.value(QStringLiteral("convscope-autosave")).toInt() != 1 || !o.value(QStringLiteral("network")).isString()) {
        Q_EMIT problem(tr("Cannot restore %1: not a ConvScope autosave file").arg(autosaveFile));
        return false;
    }
    const QString original = o.value(QStringLiteral("file")).toString();
    // Relative weight and input paths resolve next to the original file, as they did before the crash.
    const std::filesystem::path baseDir = original.isEmpty()
        ? std::filesystem::path(QDir::currentPath().toStdString())
        : std::filesystem::path(QFileInfo(original).absolutePath().toStdString());
    try {
        Network net = parseNetwork(o.value(QStringLiteral("network")).toString().toStdString(),
            QFileInfo(autosaveFile).fileName().toStdString(), baseDir);
        Network before = m_doc->network();
        m_doc->reset(before, original);
        m_doc->apply(net, tr("Restore autosaved network"));
        m_dirty = true;
        return true;
    } catch (const std::exception& e) {
        Q_EMIT problem(tr("Cannot restore %1: %2").arg(autosaveFile, QString::fromStdString(e.what())));
        return false;
    }
}

} // namespace convscope::gui

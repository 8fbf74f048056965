#include "gui/pages/input_panel.h"

#include "compute/image_input.h"
#include "compute/load_input.h"
#include "compute/npy.h"
#include "compute/runtime_paths.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QSignalBlocker>
#include <QSpinBox>

namespace convscope::gui {

namespace {
    QSpinBox* sizeSpin(int lo, int hi, QWidget* parent)
    {
        auto* s = new QSpinBox(parent);
        s->setRange(lo, hi);
        s->setAccelerated(true);
        return s;
    }
    const QStringList kImageSuffixes = { QStringLiteral("png"), QStringLiteral("jpg"), QStringLiteral("jpeg"),
        QStringLiteral("bmp"), QStringLiteral("gif"), QStringLiteral("tga"), QStringLiteral("pgm"),
        QStringLiteral("ppm"), QStringLiteral("pnm") };
    const QString kPhotoPrefix = QStringLiteral("photo:");
} // namespace

InputPanel::InputPanel(NetworkDocument* doc, QWidget* parent)
    : QWidget(parent)
    , m_doc(doc)
    , m_source(new QComboBox(this))
    , m_seed(sizeSpin(0, 1 << 30, this))
    , m_file(new QLabel(this))
    , m_batch(sizeSpin(0, 4096, this))
    , m_channels(sizeSpin(0, 65536, this))
    , m_height(sizeSpin(0, 65536, this))
    , m_width(sizeSpin(0, 65536, this))
    , m_flat(new QCheckBox(tr("features only ([batch, channels])"), this))
{
    for (const std::string& s : sampleNames())
        m_source->addItem(tr("Sample: %1").arg(QString::fromStdString(s)), QString::fromStdString("sample:" + s));
    // The photographs shipped in share/convscope/samples (resources/samples): real pictures for trained networks.
    if (const std::filesystem::path dir = dataDir() / "samples"; !dataDir().empty()) {
        const QDir photos(QString::fromStdString(dir.string()), QStringLiteral("*.png"), QDir::Name, QDir::Files);
        for (const QFileInfo& f : photos.entryInfoList())
            m_source->addItem(tr("Photo: %1").arg(f.completeBaseName()), kPhotoPrefix + f.canonicalFilePath());
    }
    m_source->addItem(tr("Random (seeded)"), QStringLiteral("random"));
    m_source->addItem(tr("File"), QStringLiteral("file"));
    m_source->setObjectName(QStringLiteral("inputSource"));
    m_batch->setObjectName(QStringLiteral("inputBatch"));
    m_channels->setObjectName(QStringLiteral("inputChannels"));
    m_height->setObjectName(QStringLiteral("inputHeight"));
    m_width->setObjectName(QStringLiteral("inputWidth"));
    m_file->setWordWrap(true);
    m_file->setTextInteractionFlags(Qt::TextSelectableByMouse);

    auto* openImage = new QPushButton(tr("Image…"), this);
    auto* openNpy = new QPushButton(tr(".npy…"), this);
    openImage->setToolTip(tr("Use a picture as the input (or drop it on the window)"));
    openNpy->setToolTip(tr("Use a NumPy array [N, C, H, W], [C, H, W] or [N, F] as the input"));
    auto* buttons = new QHBoxLayout;
    buttons->addWidget(openImage);
    buttons->addWidget(openNpy);

    auto* size = new QHBoxLayout;
    size->addWidget(m_height);
    size->addWidget(new QLabel(QStringLiteral("×"), this));
    size->addWidget(m_width);

    auto* form = new QFormLayout(this);
    form->setContentsMargins(4, 4, 4, 4);
    form->addRow(tr("Source"), m_source);
    form->addRow(tr("Seed"), m_seed);
    form->addRow(QString(), m_file);
    form->addRow(tr("Open"), buttons);
    form->addRow(tr("Batch"), m_batch);
    form->addRow(tr("Channels"), m_channels);
    form->addRow(tr("Size (H × W)"), size);
    form->addRow(QString(), m_flat);

    connect(m_source, &QComboBox::currentIndexChanged, this, [this] {
        if (m_source->currentData().toString() == QLatin1String("file")) {
            load(); // choosing "File" by itself changes nothing: use the buttons
            return;
        }
        if (const QString data = m_source->currentData().toString(); data.startsWith(kPhotoPrefix)) {
            if (!openInputFile(data.mid(kPhotoPrefix.size())))
                load();
            return;
        }
        commit(tr("Change input source"), {});
    });
    connect(m_seed, &QSpinBox::valueChanged, this, [this] { commit(tr("Change input seed"), QStringLiteral("seed")); });
    for (QSpinBox* s : { m_batch, m_channels, m_height, m_width })
        connect(s, &QSpinBox::valueChanged, this,
            [this, s] { commit(tr("Change input size"), QStringLiteral("input-") + s->objectName()); });
    connect(m_flat, &QCheckBox::toggled, this, [this] { commit(tr("Change input kind"), {}); });
    connect(openImage, &QPushButton::clicked, this, [this] {
        const QString path = QFileDialog::getOpenFileName(
            this, tr("Input image"), QString(), tr("Images (*.png *.jpg *.jpeg *.bmp *.gif *.tga *.pgm *.ppm *.pnm)"));
        if (!path.isEmpty())
            openInputFile(path);
    });
    connect(openNpy, &QPushButton::clicked, this, [this] {
        const QString path
            = QFileDialog::getOpenFileName(this, tr("Input array"), QString(), tr("NumPy arrays (*.npy)"));
        if (!path.isEmpty())
            openInputFile(path);
    });
    connect(doc, &NetworkDocument::networkChanged, this, [this] { load(); });
    load();
}

bool InputPanel::isInputFile(const QString& path)
{
    const QString suffix = QFileInfo(path).suffix().toLower();
    return suffix == QLatin1String("npy") || kImageSuffixes.contains(suffix);
}

void InputPanel::load()
{
    const InputSpec& in = m_doc->network().input;
    const QSignalBlocker b1(m_source), b2(m_seed), b3(m_batch), b4(m_channels), b5(m_height), b6(m_width), b7(m_flat);
    const QString source = QString::fromStdString(in.source);
    int idx = m_source->findData(source);
    bool isFile = false;
    if (source.startsWith(QLatin1String("random"))) {
        idx = m_source->findData(QStringLiteral("random"));
        m_seed->setValue(source.size() > 7 ? source.mid(7).toInt() : 1);
    } else if (idx < 0) {
        // One of the photographs, however the file names it (relative to the network or not)?
        const QFileInfo file(QString::fromStdString(resolveAgainst(in.source, m_doc->network().baseDir).string()));
        if (file.exists())
            idx = m_source->findData(kPhotoPrefix + file.canonicalFilePath());
        if (idx < 0) {
            idx = m_source->findData(QStringLiteral("file"));
            isFile = true;
        }
    }
    m_source->setCurrentIndex(idx);
    m_seed->setEnabled(source.startsWith(QLatin1String("random")));
    m_file->setText(isFile ? source : QString());
    m_file->setVisible(isFile);
    m_batch->setValue(int(in.batch));
    m_channels->setValue(int(in.channels));
    m_height->setValue(int(in.height));
    m_width->setValue(int(in.width));
    m_flat->setChecked(in.flat);
    m_height->setEnabled(!in.flat);
    m_width->setEnabled(!in.flat);
}

QString InputPanel::sourceFromWidgets() const
{
    const QString data = m_source->currentData().toString();
    if (data == QLatin1String("random"))
        return QStringLiteral("random:%1").arg(m_seed->value());
    if (data == QLatin1String("file") || data.startsWith(kPhotoPrefix))
        return QString::fromStdString(m_doc->network().input.source);
    return data;
}

void InputPanel::commit(const QString& text, const QString& mergeKey)
{
    InputSpec in = m_doc->network().input;
    in.source = sourceFromWidgets().toStdString();
    in.batch = m_batch->value();
    in.channels = m_channels->value();
    in.height = m_height->value();
    in.width = m_width->value();
    in.flat = m_flat->isChecked();
    m_doc->setInput(in, text, mergeKey);
}

bool InputPanel::openInputFile(const QString& path)
{
    const QFileInfo info(path);
    InputSpec in = m_doc->network().input;
    const std::filesystem::path base = m_doc->network().baseDir;
    try {
        if (!info.isFile() || !info.isReadable())
            throw std::runtime_error(tr("%1: cannot read the file (it does not exist or is not readable)")
                                         .arg(QDir::toNativeSeparators(path))
                                         .toStdString());
        if (info.suffix().toLower() == QLatin1String("npy")) {
            const NpyArray a = readNpy(path.toStdString());
            const auto& d = a.dims;
            if (d.size() == 4) {
                in = { d[0], d[1], d[2], d[3], false, in.source };
            } else if (d.size() == 3) {
                in = { 1, d[0], d[1], d[2], false, in.source };
            } else if (d.size() == 2) {
                in = { d[0], d[1], in.height, in.width, true, in.source };
            } else {
                QStringList dims;
                for (int64_t v : d)
                    dims << QString::number(v);
                throw std::runtime_error(tr("%1 has shape [%2]; a network input needs [N, C, H, W], [C, H, W] or "
                                            "[N, F]")
                                             .arg(info.fileName(), dims.join(QStringLiteral(", ")))
                                             .toStdString());
            }
        } else if (!kImageSuffixes.contains(info.suffix().toLower())) {
            throw std::runtime_error(
                tr("%1: not an image or .npy file").arg(QDir::toNativeSeparators(path)).toStdString());
        } else if (in.flat) {
            in.flat = false;
        }
        in.source = path.toStdString();
        if (!base.empty()) {
            const QString rel = QDir(QString::fromStdString(base.string())).relativeFilePath(info.absoluteFilePath());
            if (!rel.startsWith(QLatin1String("..")))
                in.source = rel.toStdString();
        }
        (void)loadInput(in, base); // decodes it once: a broken file is reported now, not at the next run
    } catch (const std::exception& e) {
        Q_EMIT problem(QString::fromStdString(e.what()));
        return false;
    }
    m_doc->setInput(in, tr("Use %1 as input").arg(info.fileName()));
    return true;
}

} // namespace convscope::gui

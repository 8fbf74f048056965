// The layer editor's fields for the 3-D kinds (conv3d, conv_transpose3d, maxpool3d, avgpool3d): kernel, stride,
// output padding and dilation as depth × height × width, and the six-sided padding. Every other field (channels,
// groups, bias, ceil mode, ...) is the 2-D kinds' own (layer_editor.cpp), since the members share their names.
#include "gui/views/layer_editor.h"

#include "gui/views/volume_param_widgets.h"

#include <variant>

namespace convscope::gui {

namespace {
    // A member of whatever 3-D kind holds it, as a triple; nullopt for kinds without it.
    template <typename Get> std::optional<Triple> tripleOf(const LayerSpec& spec, Get get)
    {
        return std::visit([&](const auto& s) -> std::optional<Triple> { return get(s); }, spec);
    }
} // namespace

void LayerEditor::buildVolumeFields(const LayerSpec& spec)
{
    // key, label, minimum, how to read it, how to write it
    auto tripleField = [&](const char* key, const QString& label, int minimum, auto get, auto set) {
        if (!tripleOf(spec, get))
            return;
        auto* e = new TripleEditor(minimum, 4096, m_form);
        const QString k = QString::fromLatin1(key);
        connect(e, &TripleEditor::valueChanged, this, [this, k, label, set](const Triple& v) {
            commit(k, tr("Change %1").arg(label.toLower()),
                [v, set](Layer& l) { std::visit([&](auto& s) { set(s, v); }, l.spec); });
        });
        addField(k, label, e, [e, get](const Layer& l) {
            if (const auto v = tripleOf(l.spec, get))
                e->setValue(*v);
        });
    };
    tripleField(
        "kernel_size", tr("Kernel"), 0,
        [](const auto& s) -> std::optional<Triple> {
            if constexpr (requires { Triple(s.kernel_size); })
                return s.kernel_size;
            return std::nullopt;
        },
        [](auto& s, const Triple& v) {
            if constexpr (requires { s.kernel_size = v; })
                s.kernel_size = v;
        });
    tripleField(
        "stride", tr("Stride"), 0,
        [](const auto& s) -> std::optional<Triple> {
            if constexpr (requires { Triple(s.effectiveStride()); })
                return s.effectiveStride(); // the pools' default is the kernel
            else if constexpr (requires { Triple(s.stride); })
                return s.stride;
            return std::nullopt;
        },
        [](auto& s, const Triple& v) {
            if constexpr (requires { s.stride = v; })
                s.stride = v;
        });
    // Padding: the six sides, or TensorFlow's same / valid.
    const bool hasPadding = std::visit(
        [](const auto& s) {
            return requires { Padding3d(s.padding); };
        },
        spec);
    if (hasPadding) {
        auto* e = new Padding3dEditor(m_form);
        connect(e, &Padding3dEditor::valueChanged, this, [this](const Padding3d& p) {
            commit(QStringLiteral("padding"), tr("Change padding"), [p](Layer& l) {
                std::visit(
                    [&](auto& s) {
                        if constexpr (requires { s.padding = p; })
                            s.padding = p;
                    },
                    l.spec);
            });
        });
        addField(QStringLiteral("padding"), tr("Padding"), e, [e](const Layer& l) {
            std::visit(
                [e](const auto& s) {
                    if constexpr (requires { e->setValue(s.padding); })
                        e->setValue(s.padding);
                },
                l.spec);
        });
    }
    tripleField(
        "output_padding", tr("Output padding"), 0,
        [](const auto& s) -> std::optional<Triple> {
            if constexpr (requires { Triple(s.output_padding); })
                return s.output_padding;
            return std::nullopt;
        },
        [](auto& s, const Triple& v) {
            if constexpr (requires { s.output_padding = v; })
                s.output_padding = v;
        });
    tripleField(
        "dilation", tr("Dilation"), 0,
        [](const auto& s) -> std::optional<Triple> {
            if constexpr (requires { Triple(s.dilation); })
                return s.dilation;
            return std::nullopt;
        },
        [](auto& s, const Triple& v) {
            if constexpr (requires { s.dilation = v; })
                s.dilation = v;
        });
}

} // namespace convscope::gui

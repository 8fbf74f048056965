// The process-wide caches of algorithm choices (conv_plan.cpp, volume_plan.cpp): Find and the re-timing run once per
// distinct layer — shape, math, layout, workspace limit, whatever else changes the answer is in the key — and every
// later session, on any thread, reuses the choice.
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <string>

namespace convscope::cudnn {

template <class Choice> class ChoiceCache {
public:
    // The stored choice with `cached` set, or nullopt.
    std::optional<Choice> find(const std::string& key)
    {
        std::lock_guard lock(m_mutex);
        auto it = m_choices.find(key);
        if (it == m_choices.end())
            return std::nullopt;
        Choice c = it->second;
        c.cached = true;
        return c;
    }
    void store(const std::string& key, const Choice& c)
    {
        std::lock_guard lock(m_mutex);
        m_choices[key] = c;
    }

private:
    std::mutex m_mutex;
    std::map<std::string, Choice> m_choices;
};

} // namespace convscope::cudnn

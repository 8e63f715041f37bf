#include "parsers/throttled.h"

#include <cctype>
#include <charconv>

namespace diskprobe::parsers {

namespace {

std::string_view trim(std::string_view s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
    return s;
}

std::optional<std::uint32_t> parse_hex32(std::string_view s) {
    s = trim(s);
    if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) s.remove_prefix(2);
    if (s.empty()) return std::nullopt;
    std::uint32_t v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v, 16);
    if (ec != std::errc{} || p != s.data() + s.size()) return std::nullopt;
    return v;
}

}  // namespace

Throttled decode_throttled(std::uint32_t v) {
    Throttled t;
    t.value = v;
    t.under_voltage_now = v & (1u << 0);
    t.arm_freq_capped_now = v & (1u << 1);
    t.throttled_now = v & (1u << 2);
    t.soft_temp_limit_now = v & (1u << 3);
    t.under_voltage_occurred = v & (1u << 16);
    t.arm_freq_capped_occurred = v & (1u << 17);
    t.throttled_occurred = v & (1u << 18);
    t.soft_temp_limit_occurred = v & (1u << 19);
    t.unknown_bits = v & ~0x000f000fu;
    return t;
}

ParseResult<Throttled> parse_throttled(std::string_view text) {
    std::string_view value = text;
    constexpr std::string_view kKey = "throttled=";
    for (std::string_view rest = text; !rest.empty();) {
        const auto nl = rest.find('\n');
        const std::string_view line = trim(rest.substr(0, nl));
        rest = nl == std::string_view::npos ? std::string_view{} : rest.substr(nl + 1);
        if (line.rfind(kKey, 0) == 0) {
            value = line.substr(kKey.size());
            break;
        }
    }
    auto v = parse_hex32(value);
    if (!v) return ParseResult<Throttled>::fail("get_throttled: not a 32-bit hex value");
    return ParseResult<Throttled>::ok(decode_throttled(*v));
}

std::optional<ThrottledLogEvent> parse_throttled_log_line(std::string_view line) {
    ThrottledLogEvent e;
    if (line.find("Under-voltage detected!") != std::string_view::npos) e.under_voltage_detected = true;
    else if (line.find("Voltage normalised") == std::string_view::npos) return std::nullopt;
    const auto open = line.rfind('('), close = line.rfind(')');
    if (open == std::string_view::npos || close == std::string_view::npos || close < open) return std::nullopt;
    auto v = parse_hex32(line.substr(open + 1, close - open - 1));
    if (!v) return std::nullopt;
    e.flags = decode_throttled(*v);
    return e;
}

}  // namespace diskprobe::parsers

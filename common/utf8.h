// The one UTF-8 repair policy. Text that comes from a peer (a worker's reason, log tail,
// hostname, a driver's device string) or from a child process's output is repaired with these
// functions before it is stored, sent or reported, so every place shows the same bytes.
//
// Policy: well-formed UTF-8 (RFC 3629: no overlong forms, no UTF-16 surrogates, nothing above
// U+10FFFF) passes through unchanged; every byte that is not part of a well-formed sequence
// becomes U+FFFD (EF BF BD), one replacement per byte. NUL bytes are valid and kept.
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace am {

inline constexpr std::string_view kUtf8Replacement = "\xEF\xBF\xBD";   // U+FFFD
inline constexpr std::string_view kUtf8Ellipsis = "\xE2\x80\xA6";      // U+2026, marks a cut

bool is_valid_utf8(std::string_view text);

// `text` with the policy above applied. Returns a copy unchanged when it is already valid.
std::string repair_utf8(std::string_view text);

// The end of repair_utf8(text): at most `max_bytes` bytes of it, starting at a character
// boundary (a character cut in half is dropped, not replaced). When anything was cut,
// `cut_marker` is prepended (its bytes are not counted in `max_bytes`).
std::string utf8_tail(std::string_view text, std::size_t max_bytes,
                      std::string_view cut_marker = {});

// repair_utf8(text) made inert for a terminal: every control character (C0, DEL, and the C1
// controls U+0080-U+009F) becomes U+FFFD, so text from a peer (a job's reason, a model label of
// a plan) cannot move the cursor, clear the screen, retitle the window or hide a line behind a
// carriage return. `keep_newlines`: LF and TAB stay (a log message of several lines); otherwise
// LF, CR and TAB become spaces (one line: a progress display, a table cell).
std::string terminal_safe(std::string_view text, bool keep_newlines = false);

}  // namespace am

// Errors carry a message written for a person. Library code throws; only main() turns an error into an
// exit status (see cli/), so the window and the command line report the same words.
#pragma once

#include <stdexcept>
#include <string>

namespace convscope {

// Anything that went wrong at run time that is neither bad input nor an unsupported request.
class Error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// The user's input is wrong: a malformed file, an impossible layer parameter, a size that overflows,
// a tensor beyond the memory budget. The message names the file, the layer and the key.
class InputError : public Error {
public:
    using Error::Error;
};

// A backend cannot run what was asked: it is unavailable, or does not support a layer. The message
// says which and why and contains the word "unsupported" when a layer is not supported.
class UnsupportedError : public Error {
public:
    using Error::Error;
};

// A device ran out of memory; the message says how much was asked and how much was free.
class OutOfMemoryError : public Error {
public:
    using Error::Error;
};

} // namespace convscope

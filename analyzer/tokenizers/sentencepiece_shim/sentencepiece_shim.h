#pragma once
// C interface of the SentencePiece shim library (libheadscan_sentencepiece.so).
//
// Why a shim: Debian's libsentencepiece bundles its own copy of protobuf 3.14 and exports its
// symbols, while LibTorch loads the system protobuf 3.21. Linked into one program, the two copies
// bind to each other and the process crashes before main(). headscan therefore loads the shim,
// and through it libsentencepiece, with dlopen(RTLD_LOCAL | RTLD_DEEPBIND): sentencepiece then
// resolves protobuf to its own copy and LibTorch never sees it.

#include <cstddef>

extern "C" {

// Called once per piece of an encoding: id, piece text, byte span in the input.
typedef void (*headscan_spm_piece_fn)(void* context, int id, const char* piece, std::size_t piece_size,
                                      std::size_t begin, std::size_t end);
// Receives a string (an error message or a piece).
typedef void (*headscan_spm_string_fn)(void* context, const char* text, std::size_t size);

// Returns a processor, or null after passing the error message to `on_error`.
void* headscan_spm_load(const char* path, headscan_spm_string_fn on_error, void* context);
void headscan_spm_free(void* processor);
int headscan_spm_piece_size(const void* processor);
int headscan_spm_bos_id(const void* processor);
// Kind of an id: bit 0 byte piece, bit 1 control symbol, bit 2 unknown piece.
int headscan_spm_kind(const void* processor, int id);
void headscan_spm_id_to_piece(const void* processor, int id, headscan_spm_string_fn on_piece, void* context);
int headscan_spm_piece_to_id(const void* processor, const char* piece, std::size_t size);
void headscan_spm_encode(const void* processor, const char* text, std::size_t size, headscan_spm_piece_fn on_piece,
                         void* context);
}

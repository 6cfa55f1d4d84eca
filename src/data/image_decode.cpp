// PNG (libpng) and JPEG (libjpeg) decoding to RGB bytes. Both libraries
// report errors by longjmp; the functions that call setjmp construct every
// C++ object they use before it, so a jump never skips a destructor.
#include <algorithm>
#include <csetjmp>
#include <cstddef>
#include <cstdio>  // before jpeglib.h, which uses FILE and size_t without including them
#include <cstring>
#include <filesystem>
#include <fstream>
#include <new>

#include <jpeglib.h>
#include <png.h>

#include "convkit/data/image_folder.h"
#include "data/file_bytes.h"
#include "data/pixels.h"

namespace convkit::data {

namespace {

// Larger headers are corrupt (or hostile) rather than real training images.
constexpr std::uint64_t kMaxPixels = std::uint64_t{1} << 26;
// Deflate expands at most 1032-fold (a 258-byte match per 2 bits), so a PNG's
// filtered rows can never take more than this many times its file size.
constexpr std::uint64_t kMaxDeflateRatio = 1032;
// libjpeg's working memory: a progressive 4:4:4 image of kMaxPixels keeps
// 384 MiB of coefficients.
constexpr long kMaxJpegMemory = 512L << 20;
// Ancillary PNG chunks (all skipped) may still not claim more than this.
constexpr png_alloc_size_t kMaxPngChunk = 8u << 20;

// Messages are formatted into char arrays: a longjmp must not skip the
// destructor of a std::string.
using Message = char[160];

void format_too_large(Message& text, std::uint64_t width, std::uint64_t height) {
  std::snprintf(text, sizeof text, "image too large: %llux%llu pixels, more than %llu",
                static_cast<unsigned long long>(width), static_cast<unsigned long long>(height),
                static_cast<unsigned long long>(kMaxPixels));
}

struct Decoded {
  bool header_only = false;  // stop after the size and format checks (probe_image)
  std::uint64_t file_size = 0;  // the whole file's, when only its head is at hand
  std::uint32_t width = 0, height = 0;
  std::vector<std::uint8_t> rgb;  // interleaved, height * width * 3
  bool failed = false;
  std::size_t fail_offset = 0;
  char message[JMSG_LENGTH_MAX + 64] = {};
};

void set_message(Decoded* out, const char* message) {
  std::snprintf(out->message, sizeof out->message, "%s", message);
}

// ---------------------------------------------------------------- PNG

// Everything the decoder changes between setjmp and longjmp lives here, in
// the caller's frame, so it is well defined after the jump.
struct PngState {
  const std::uint8_t* data = nullptr;
  std::size_t size = 0;
  std::size_t pos = 0;
  Decoded* out = nullptr;
  png_structp png = nullptr;
  png_infop info = nullptr;
  std::vector<png_bytep> rows;
};

void png_read_bytes(png_structp png, png_bytep dst, png_size_t n) {
  auto* st = static_cast<PngState*>(png_get_io_ptr(png));
  if (st->size - st->pos < n) {
    st->pos = st->size;
    png_error(png, "unexpected end of file");
  }
  std::memcpy(dst, st->data + st->pos, n);
  st->pos += n;
}

void png_on_error(png_structp png, png_const_charp message) {
  set_message(static_cast<PngState*>(png_get_error_ptr(png))->out, message);
  png_longjmp(png, 1);
}

// Warnings (a bad CRC in a skipped chunk and the like) leave the pixels
// intact; what libpng calls benign errors are made errors instead.
void png_on_warning(png_structp, png_const_charp) {}

void decode_png_into(PngState* st) {
  if (setjmp(png_jmpbuf(st->png))) {
    st->out->failed = true;
    st->out->fail_offset = st->pos;
    return;
  }
  png_structp png = st->png;
  png_infop info = st->info;
  png_set_read_fn(png, st, &png_read_bytes);
  // Only the chunks that make the pixels are read: text, ICC profiles and the
  // rest are skipped unread. A chunk longer than kMaxPngChunk is an error, not
  // (libpng's default for this "benign" error) a warning followed by
  // allocating it: 123 bytes claiming a 1.6 GB zTXt took 1.6 GB.
  png_set_keep_unknown_chunks(png, PNG_HANDLE_CHUNK_NEVER, nullptr, -1);
  png_set_chunk_malloc_max(png, kMaxPngChunk);
  png_set_benign_errors(png, 0);
  png_read_info(png, info);
  const png_uint_32 width = png_get_image_width(png, info);
  const png_uint_32 height = png_get_image_height(png, info);
  const int color = png_get_color_type(png, info);
  const int depth = png_get_bit_depth(png, info);
  Message text;
  if (std::uint64_t{width} * height > kMaxPixels) {
    format_too_large(text, width, height);
    png_error(png, text);
  }
  // The header alone must not buy a large buffer: the compressed rows (each
  // a filter byte and its samples) must fit in the file at deflate's best.
  const std::uint64_t row_bits = std::uint64_t{width} * png_get_channels(png, info) * static_cast<unsigned>(depth);
  const std::uint64_t filtered = std::uint64_t{height} * (1 + (row_bits + 7) / 8);
  const std::uint64_t file_size = std::max<std::uint64_t>(st->size, st->out->file_size);
  if (filtered > kMaxDeflateRatio * file_size) {
    std::snprintf(text, sizeof text, "a %ux%u image needs %llu bytes of rows, more than a %llu-byte file can hold",
                  static_cast<unsigned>(width), static_cast<unsigned>(height),
                  static_cast<unsigned long long>(filtered), static_cast<unsigned long long>(file_size));
    png_error(png, text);
  }
  if (st->out->header_only) {
    st->out->width = width;
    st->out->height = height;
    return;
  }
  // To 8-bit RGB the way PIL's convert("RGB") does: high byte of 16-bit
  // samples, palettes expanded, gray repeated, alpha ignored. A tRNS chunk
  // turns into an alpha channel when a palette expands, so it goes too.
  if (depth == 16) png_set_strip_16(png);
  if (color == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  if (color == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(png);
  if (color == PNG_COLOR_TYPE_GRAY || color == PNG_COLOR_TYPE_GRAY_ALPHA) png_set_gray_to_rgb(png);
  if ((color & PNG_COLOR_MASK_ALPHA) || png_get_valid(png, info, PNG_INFO_tRNS)) png_set_strip_alpha(png);
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  if (png_get_rowbytes(png, info) != std::size_t{width} * 3) png_error(png, "unexpected row layout");
  st->out->rgb.resize(std::size_t{width} * height * 3);
  st->rows.resize(height);
  for (png_uint_32 y = 0; y < height; ++y) {
    st->rows[y] = st->out->rgb.data() + std::size_t{y} * width * 3;
  }
  png_read_image(png, st->rows.data());
  st->out->width = width;
  st->out->height = height;
}

void decode_png(const std::uint8_t* data, std::size_t size, Decoded* out) {
  PngState st;
  st.data = data;
  st.size = size;
  st.out = out;
  st.png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &st, &png_on_error, &png_on_warning);
  st.info = st.png ? png_create_info_struct(st.png) : nullptr;
  if (st.png && st.info) {
    try {
      decode_png_into(&st);
    } catch (const std::bad_alloc&) {  // the pixel buffer; libpng's state is still freed below
      out->failed = true;
      out->fail_offset = st.pos;
      set_message(out, "out of memory allocating the pixels");
    }
  } else {
    out->failed = true;
    set_message(out, "libpng could not allocate its state");
  }
  png_destroy_read_struct(&st.png, &st.info, nullptr);
}

// ---------------------------------------------------------------- JPEG

struct JpegState {
  jpeg_decompress_struct cinfo;
  jpeg_error_mgr mgr;
  std::jmp_buf jump;
  Decoded* out = nullptr;
  std::size_t size = 0;
};

std::size_t jpeg_offset(const JpegState& st) {
  return st.cinfo.src ? st.size - st.cinfo.src->bytes_in_buffer : 0;
}

void jpeg_on_error(j_common_ptr cinfo) {
  auto* st = static_cast<JpegState*>(cinfo->client_data);
  (*cinfo->err->format_message)(cinfo, st->out->message);
  std::longjmp(st->jump, 1);
}

// libjpeg only warns about corrupt or truncated data and then fills the rest
// with gray; a training set is better served by an error.
void jpeg_on_message(j_common_ptr cinfo, int level) {
  if (level < 0) jpeg_on_error(cinfo);
}

void jpeg_fail(JpegState* st, const char* message) {
  set_message(st->out, message);
  std::longjmp(st->jump, 1);
}

void decode_jpeg_into(JpegState* st, const std::uint8_t* data) {
  if (setjmp(st->jump)) {
    st->out->failed = true;
    st->out->fail_offset = jpeg_offset(*st);
    return;
  }
  jpeg_decompress_struct* cinfo = &st->cinfo;
  jpeg_mem_src(cinfo, data, static_cast<unsigned long>(st->size));
  // Beyond this libjpeg fails rather than allocate (it has no backing store).
  cinfo->mem->max_memory_to_use = kMaxJpegMemory;
  jpeg_read_header(cinfo, TRUE);
  // Before jpeg_start_decompress, which allocates for the whole image (and,
  // for a progressive one, reads the whole file).
  if (std::uint64_t{cinfo->image_width} * cinfo->image_height > kMaxPixels) {
    Message text;
    format_too_large(text, cinfo->image_width, cinfo->image_height);
    jpeg_fail(st, text);
  }
  if (cinfo->jpeg_color_space == JCS_CMYK || cinfo->jpeg_color_space == JCS_YCCK) {
    jpeg_fail(st, "CMYK JPEG images are not supported");
  }
  if (st->out->header_only) {
    st->out->width = cinfo->image_width;
    st->out->height = cinfo->image_height;
    return;
  }
  cinfo->out_color_space = JCS_RGB;  // from gray and YCbCr alike
  jpeg_start_decompress(cinfo);
  if (cinfo->output_components != 3) jpeg_fail(st, "unexpected component count");
  const std::size_t stride = std::size_t{cinfo->output_width} * 3;
  st->out->rgb.resize(stride * cinfo->output_height);
  while (cinfo->output_scanline < cinfo->output_height) {
    JSAMPROW row = st->out->rgb.data() + cinfo->output_scanline * stride;
    jpeg_read_scanlines(cinfo, &row, 1);
  }
  jpeg_finish_decompress(cinfo);
  st->out->width = cinfo->output_width;
  st->out->height = cinfo->output_height;
}

void decode_jpeg(const std::uint8_t* data, std::size_t size, Decoded* out) {
  JpegState st{};
  st.out = out;
  st.size = size;
  st.cinfo.err = jpeg_std_error(&st.mgr);
  st.mgr.error_exit = &jpeg_on_error;
  st.mgr.emit_message = &jpeg_on_message;
  st.cinfo.client_data = &st;  // jpeg_create_decompress keeps it
  if (setjmp(st.jump)) {  // only jpeg_create_decompress can jump here
    out->failed = true;
  } else {
    jpeg_create_decompress(&st.cinfo);
    try {
      decode_jpeg_into(&st, data);
    } catch (const std::bad_alloc&) {  // the pixel buffer; libjpeg's state is still freed below
      out->failed = true;
      out->fail_offset = jpeg_offset(st);
      set_message(out, "out of memory allocating the pixels");
    }
  }
  jpeg_destroy_decompress(&st.cinfo);
}

// Decodes `bytes` into `decoded` (or only its header), throwing Error naming
// the file and the byte offset where decoding failed.
void decode_or_fail(const std::uint8_t* data, std::size_t size, const std::string& name, Decoded& decoded) {
  static constexpr std::uint8_t kPng[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  const char* format = nullptr;
  if (size >= 8 && std::memcmp(data, kPng, 8) == 0) {
    format = "PNG";
    decode_png(data, size, &decoded);
  } else if (size >= 3 && data[0] == 0xFF && data[1] == 0xD8 && data[2] == 0xFF) {
    format = "JPEG";
    decode_jpeg(data, size, &decoded);
  } else {
    CK_FAIL("image '", name, "': not a PNG or JPEG file (first bytes ",
            detail::hex_bytes(data, std::min<std::size_t>(size, 8)), ") at byte offset 0");
  }
  CK_CHECK(!decoded.failed, "image '", name, "': ", format, " decoding failed (", decoded.message,
           ") at byte offset ", decoded.fail_offset);
}

}  // namespace

ImageHeader probe_image(const std::string& path) {
  // The header sits in the first bytes, except behind large JPEG metadata
  // (EXIF thumbnails, ICC profiles): then the whole file is read.
  constexpr std::size_t kHead = 64 << 10;
  std::error_code ec;
  const std::uint64_t file_size = std::filesystem::file_size(path, ec);
  CK_CHECK(!ec, "image '", path, "': cannot read it: ", ec.message());
  std::vector<std::uint8_t> head(std::min<std::uint64_t>(file_size, kHead));
  {
    std::ifstream in(path, std::ios::binary);
    in.read(reinterpret_cast<char*>(head.data()), static_cast<std::streamsize>(head.size()));
    CK_CHECK(in.gcount() == static_cast<std::streamsize>(head.size()), "image '", path, "': cannot read its first ",
             head.size(), " bytes");
  }
  Decoded decoded;
  decoded.header_only = true;
  decoded.file_size = file_size;
  if (head.size() < file_size) {
    try {
      decode_or_fail(head.data(), head.size(), path, decoded);
      return {decoded.width, decoded.height};
    } catch (const Error&) {
      head = detail::read_raw(path, "image");  // the header may end further in
      decoded = Decoded{};
      decoded.header_only = true;
      decoded.file_size = file_size;
    }
  }
  decode_or_fail(head.data(), head.size(), path, decoded);
  return {decoded.width, decoded.height};
}

Tensor decode_image(const std::vector<std::uint8_t>& bytes, const std::string& name) {
  Decoded decoded;
  decode_or_fail(bytes.data(), bytes.size(), name, decoded);
  const std::int64_t h = decoded.height, w = decoded.width;
  Tensor image = Tensor::empty(Shape{3, h, w}, TensorOptions(DType::float32));
  float* out = image.data<float>();
  // Interleaved HWC bytes -> planar CHW floats.
  for (std::int64_t y = 0; y < h; ++y) {
    for (std::int64_t x = 0; x < w; ++x) {
      const std::uint8_t* px = decoded.rgb.data() + (y * w + x) * 3;
      for (std::int64_t c = 0; c < 3; ++c) out[(c * h + y) * w + x] = px[c];
    }
  }
  return image;
}

Tensor load_image(const std::string& path) {
  return decode_image(detail::read_raw(path, "image"), path);
}

}  // namespace convkit::data

#include <convkit/data/image_folder.h>

#include <filesystem>

#include "data_files.h"
#include "memory_limit.h"

namespace convkit::testing {
namespace {

// 3 x 2 RGB: pixel (y, x) = (10 y + x, 100 + y, 200 + x).
Bytes rgb_samples(int w, int h, int channels) {
  Bytes s;
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      const std::uint8_t v[4] = {static_cast<std::uint8_t>(10 * y + x), static_cast<std::uint8_t>(100 + y),
                                 static_cast<std::uint8_t>(200 + x), 77};
      s.insert(s.end(), v, v + channels);
    }
  }
  return s;
}

// Planar [3, H, W] expectation for rgb_samples.
std::vector<float> rgb_expected(int w, int h) {
  std::vector<float> out(static_cast<std::size_t>(3 * w * h));
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      out[static_cast<std::size_t>((0 * h + y) * w + x)] = static_cast<float>(10 * y + x);
      out[static_cast<std::size_t>((1 * h + y) * w + x)] = static_cast<float>(100 + y);
      out[static_cast<std::size_t>((2 * h + y) * w + x)] = static_cast<float>(200 + x);
    }
  }
  return out;
}

TEST(ImageDecode, PngColourTypesBecomeRGB) {
  const int w = 3, h = 2;
  const Tensor rgb = data::decode_image(png_bytes(w, h, 3, rgb_samples(w, h, 3)), "rgb.png");
  EXPECT_EQ(rgb.shape(), (Shape{3, h, w}));
  EXPECT_EQ(rgb.to_vector<float>(), rgb_expected(w, h));
  // Alpha is dropped, not composited.
  EXPECT_EQ(data::decode_image(png_bytes(w, h, 4, rgb_samples(w, h, 4)), "rgba.png").to_vector<float>(),
            rgb_expected(w, h));
  // Gray (and gray + alpha) is repeated into R, G and B.
  const Bytes gray = {0, 50, 100, 150, 200, 250};
  const auto g = data::decode_image(png_bytes(w, h, 1, gray), "gray.png").to_vector<float>();
  Bytes gray_alpha;
  for (std::uint8_t v : gray) gray_alpha.insert(gray_alpha.end(), {v, 9});
  EXPECT_EQ(data::decode_image(png_bytes(w, h, 2, gray_alpha), "ga.png").to_vector<float>(), g);
  for (int c = 0; c < 3; ++c) {
    for (int i = 0; i < 6; ++i) EXPECT_EQ(g[static_cast<std::size_t>(c * 6 + i)], gray[static_cast<std::size_t>(i)]);
  }
  // 16-bit samples keep their high byte.
  const std::vector<std::uint16_t> deep = {0x1234, 0xABCD, 0x00FF, 0xFF00, 0x8080, 0x0101};
  EXPECT_EQ(data::decode_image(png16_bytes(2, 1, deep), "deep.png").to_vector<float>(),
            (std::vector<float>{0x12, 0xFF, 0xAB, 0x80, 0x00, 0x01}));
}

TEST(ImageDecode, JpegRgbAndGray) {
  // Flat colours survive quality-100 JPEG within a level or two.
  const int w = 16, h = 8;
  Bytes flat;
  for (int i = 0; i < w * h; ++i) flat.insert(flat.end(), {200, 40, 90});
  const auto rgb = data::decode_image(jpeg_bytes(w, h, 3, flat), "flat.jpg").to_vector<float>();
  ASSERT_EQ(rgb.size(), static_cast<std::size_t>(3 * w * h));
  for (int i = 0; i < w * h; ++i) {
    EXPECT_NEAR(rgb[static_cast<std::size_t>(i)], 200, 2);
    EXPECT_NEAR(rgb[static_cast<std::size_t>(w * h + i)], 40, 2);
    EXPECT_NEAR(rgb[static_cast<std::size_t>(2 * w * h + i)], 90, 2);
  }
  Bytes gradient;
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) gradient.push_back(static_cast<std::uint8_t>(16 * x));
  }
  const Tensor gray = data::decode_image(jpeg_bytes(w, h, 1, gradient), "gray.jpg");
  EXPECT_EQ(gray.shape(), (Shape{3, h, w}));
  const auto g = gray.to_vector<float>();
  for (int i = 0; i < w * h; ++i) {
    EXPECT_EQ(g[static_cast<std::size_t>(i)], g[static_cast<std::size_t>(w * h + i)]);
    EXPECT_EQ(g[static_cast<std::size_t>(i)], g[static_cast<std::size_t>(2 * w * h + i)]);
    EXPECT_NEAR(g[static_cast<std::size_t>(i)], gradient[static_cast<std::size_t>(i)], 3);
  }
}

TEST(ImageDecodeErrors, TruncatedCorruptOrUnknownNameFileAndOffset) {
  TempDir dir;
  const Bytes png = png_bytes(8, 8, 3, rgb_samples(8, 8, 3));
  write_bytes(dir.file("cut.png"), Bytes(png.begin(), png.begin() + 60));
  EXPECT_ERROR_MENTIONS(data::load_image(dir.file("cut.png")), dir.file("cut.png"), "PNG",
                        "byte offset 60");
  Bytes crc = png;
  crc[45] ^= 0xff;  // inside IDAT: its CRC no longer matches
  write_bytes(dir.file("crc.png"), crc);
  EXPECT_ERROR_MENTIONS(data::load_image(dir.file("crc.png")), dir.file("crc.png"), "PNG",
                        "byte offset");
  Bytes flat;
  for (int i = 0; i < 64 * 64; ++i) flat.insert(flat.end(), {static_cast<std::uint8_t>(i % 251), 40, 90});
  const Bytes jpg = jpeg_bytes(64, 64, 3, flat);
  write_bytes(dir.file("cut.jpg"), Bytes(jpg.begin(), jpg.begin() + static_cast<std::ptrdiff_t>(jpg.size() / 2)));
  EXPECT_ERROR_MENTIONS(data::load_image(dir.file("cut.jpg")), dir.file("cut.jpg"), "JPEG",
                        "byte offset");
  write_bytes(dir.file("text.png"), Bytes{'h', 'e', 'l', 'l', 'o'});
  EXPECT_ERROR_MENTIONS(data::load_image(dir.file("text.png")), "not a PNG or JPEG", "68 65 6c",
                        "byte offset 0");
  EXPECT_ERROR_MENTIONS(data::load_image(dir.file("absent.png")), dir.file("absent.png"),
                        "cannot open");
}

// Issue 22: palette expansion turns a tRNS chunk into an alpha channel,
// which was never stripped ("unexpected row layout").
TEST(ImageDecode, PalettedPngWithTransparencyBecomesRGB) {
  const Bytes palette = {10, 20, 30, 40, 50, 60, 70, 80, 90};
  const Bytes indices = {0, 1, 2, 1};
  const Tensor image = data::decode_image(png_palette_bytes(2, 2, palette, {0, 128}, indices), "trns.png");
  EXPECT_EQ(image.shape(), (Shape{3, 2, 2}));
  EXPECT_EQ(image.to_vector<float>(), (std::vector<float>{10, 40, 70, 40, 20, 50, 80, 50, 30, 60, 90, 60}));
  EXPECT_EQ(data::decode_image(png_palette_bytes(2, 2, palette, {}, indices), "plte.png").to_vector<float>(),
            image.to_vector<float>());
}

Bytes png_signature_and_header(std::uint32_t width, std::uint32_t height, std::uint8_t color_type) {
  Bytes out = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  Bytes ihdr;
  for (std::uint32_t v : {width, height}) {
    for (int shift = 24; shift >= 0; shift -= 8) ihdr.push_back(static_cast<std::uint8_t>(v >> shift));
  }
  ihdr.insert(ihdr.end(), {8, color_type, 0, 0, 0});
  const Bytes chunk = png_chunk("IHDR", ihdr);
  out.insert(out.end(), chunk.begin(), chunk.end());
  return out;
}

// A chunk that claims 1.6 GB in a 60-byte file: libpng called the length
// check's failure benign, ignored it, and allocated the 1.6 GB.
TEST(ImageDecodeErrors, PngChunkClaimingGigabytesIsAnError) {
  Bytes png = png_signature_and_header(1, 1, 0);
  const Bytes ztxt = png_chunk("zTXt", {'C', 'o', 'm', 0, 0, 0x78, 0x9c}, 1600000000);
  png.insert(png.end(), ztxt.begin(), ztxt.end());
  EXPECT_ERROR_MENTIONS(data::decode_image(png, "ztxt.png"), "ztxt.png", "PNG", "chunk data is too large");
}

// 8192 x 8192 RGB in 100 bytes: the 192 MiB pixel buffer was allocated
// before a single row was read.
TEST(ImageDecodeErrors, PngHeaderClaimingMoreThanTheFileCanHoldIsAnError) {
  Bytes png = png_signature_and_header(8192, 8192, 2);
  for (const Bytes& chunk : {png_chunk("IDAT", {0x78, 0x9c, 0x63, 0x00, 0x00, 0x00, 0x01, 0x00, 0x01}),
                             png_chunk("IEND", {})}) {
    png.insert(png.end(), chunk.begin(), chunk.end());
  }
  EXPECT_ERROR_MENTIONS(data::decode_image(png, "big.png"), "big.png",
                        "a 8192x8192 image needs 201334784 bytes of rows, more than a 66-byte file can hold");
  // The bound is deflate's best ratio: a real, highly compressible image passes.
  const Tensor flat = data::decode_image(png_bytes(1024, 1024, 1, Bytes(1024 * 1024, 7)), "flat.png");
  EXPECT_EQ(flat.shape(), (Shape{3, 1024, 1024}));
}

// The pixel limit is checked right after the header, before
// jpeg_start_decompress allocates for the image: for a progressive JPEG it
// allocated every coefficient (512 MiB here) and read the whole file first.
TEST(ImageDecodeErrors, JpegHeaderClaimingTooManyPixelsIsAnErrorAtTheHeader) {
  Bytes jpg = jpeg_bytes(8, 8, 1, Bytes(64, 100), true);
  const auto marker = [&](std::uint8_t code) {
    std::size_t at = 0;
    while (at + 1 < jpg.size() && !(jpg[at] == 0xFF && jpg[at + 1] == code)) ++at;
    return at;
  };
  const std::size_t sof = marker(0xC2), sos = marker(0xDA);
  ASSERT_LT(sos + 4, jpg.size());
  for (std::size_t at : {sof + 5, sof + 7}) {  // height, then width: 16384 each
    jpg[at] = 0x40;
    jpg[at + 1] = 0x00;
  }
  const std::size_t header_end = sos + 2 + (std::size_t{jpg[sos + 2]} << 8) + jpg[sos + 3];
  EXPECT_ERROR_MENTIONS(data::decode_image(jpg, "big.jpg"), "big.jpg", "JPEG",
                        "image too large: 16384x16384 pixels, more than 67108864",
                        "at byte offset " + std::to_string(header_end));
}

// Running out of memory for the pixels is a decoding error naming the
// file, not std::bad_alloc past libpng's state: a 4096 x 4096 PNG (48 MiB
// of RGB) decoded with 32 MiB of address space to spare.
TEST(ImageDecodeErrorsDeathTest, OutOfMemoryForThePixelsIsAnError) {
  if (!kAddressSpaceLimitWorks) GTEST_SKIP() << "sanitizers need more address space than the limit leaves";
  const Bytes png = png_bytes(4096, 4096, 1, Bytes(std::size_t{16} << 20, 9));
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(exit_after_body_under_memory_limit(
                  std::uint64_t{32} << 20, [&] { data::decode_image(png, "large.png"); },
                  "image 'large.png': PNG decoding failed (out of memory allocating the pixels)"),
              ::testing::ExitedWithCode(0), "");
}

TEST(ImageFolder, ClassesFromSortedSubfoldersAndFilesInOrder) {
  TempDir dir;
  write_bytes(dir.file("dogs/b.PNG"), png_bytes(3, 2, 4, rgb_samples(3, 2, 4)));
  write_bytes(dir.file("dogs/a.jpeg"), jpeg_bytes(3, 2, 3, rgb_samples(3, 2, 3)));
  write_bytes(dir.file("dogs/notes.txt"), Bytes{'x'});
  write_bytes(dir.file("cats/nested/c.jpg"), jpeg_bytes(3, 2, 1, Bytes(6, 128)));
  write_bytes(dir.file("cats/a.png"), png_bytes(3, 2, 3, rgb_samples(3, 2, 3)));
  write_bytes(dir.file(".cache/x.png"), png_bytes(3, 2, 3, rgb_samples(3, 2, 3)));
  write_bytes(dir.file("cats/.thumbs/y.png"), png_bytes(3, 2, 3, rgb_samples(3, 2, 3)));
  std::filesystem::create_directories(dir.file("birds"));

  const data::ImageFolder ds(dir.path());
  EXPECT_EQ(ds.class_names(), (std::vector<std::string>{"birds", "cats", "dogs"}));
  EXPECT_EQ(ds.num_classes(), 3);
  ASSERT_EQ(ds.size(), 4);
  EXPECT_EQ(ds.path(0), dir.file("cats/a.png"));
  EXPECT_EQ(ds.path(1), dir.file("cats/nested/c.jpg"));
  EXPECT_EQ(ds.path(2), dir.file("dogs/a.jpeg"));
  EXPECT_EQ(ds.path(3), dir.file("dogs/b.PNG"));
  EXPECT_EQ(ds.get(0).label, 1);
  EXPECT_EQ(ds.get(3).label, 2);
  EXPECT_EQ(ds.get(0).image.to_vector<float>(), rgb_expected(3, 2));
  EXPECT_EQ(ds.get(3).image.to_vector<float>(), rgb_expected(3, 2));
  EXPECT_EQ(ds.image_shape(), (Shape{3, 0, 0}));  // sizes may differ without a resize
}

TEST(ImageFolder, ResizeOnLoad) {
  TempDir dir;
  // 2 x 1 RGB [a, b] upsampled to 4 wide: a, .75a + .25b, .25a + .75b, b.
  write_bytes(dir.file("only/x.png"), png_bytes(2, 1, 3, Bytes{0, 0, 0, 100, 40, 200}));
  data::ImageFolderOptions options;
  options.height = 1;
  options.width = 4;
  const data::ImageFolder ds(dir.path(), options);
  EXPECT_EQ(ds.image_shape(), (Shape{3, 1, 4}));
  const Tensor image = ds.get(0).image;
  EXPECT_EQ(image.shape(), (Shape{3, 1, 4}));
  EXPECT_EQ(image.to_vector<float>(),
            (std::vector<float>{0, 25, 75, 100, 0, 10, 30, 40, 0, 50, 150, 200}));
}

// probe_image reads the header alone: what it refuses, decoding refuses too,
// and a file whose pixel data alone is corrupt passes it (get() finds that).
TEST(ImageProbe, HeaderSizesAndErrorsWithoutThePixels) {
  TempDir dir;
  const Bytes png = png_bytes(8, 6, 3, rgb_samples(8, 6, 3));
  write_bytes(dir.file("ok.png"), png);
  EXPECT_EQ(data::probe_image(dir.file("ok.png")).width, 8u);
  EXPECT_EQ(data::probe_image(dir.file("ok.png")).height, 6u);
  Bytes crc = png;
  crc[png.size() - 20] ^= 0xff;  // inside IDAT
  write_bytes(dir.file("pixels.png"), crc);
  EXPECT_EQ(data::probe_image(dir.file("pixels.png")).height, 6u);
  EXPECT_ERROR_MENTIONS(data::load_image(dir.file("pixels.png")), "PNG");
  write_bytes(dir.file("cut.png"), Bytes(png.begin(), png.begin() + 20));
  EXPECT_ERROR_MENTIONS(data::probe_image(dir.file("cut.png")), dir.file("cut.png"), "PNG", "byte offset 20");
  Bytes big = png_signature_and_header(8192, 8192, 2);
  for (const Bytes& chunk : {png_chunk("IDAT", {0x78, 0x9c, 0x63, 0x00, 0x00, 0x00, 0x01, 0x00, 0x01}),
                             png_chunk("IEND", {})})
    big.insert(big.end(), chunk.begin(), chunk.end());
  write_bytes(dir.file("big.png"), big);
  EXPECT_ERROR_MENTIONS(data::probe_image(dir.file("big.png")), "more than a 66-byte file can hold");
  write_bytes(dir.file("text.jpg"), Bytes{'h', 'i'});
  EXPECT_ERROR_MENTIONS(data::probe_image(dir.file("text.jpg")), "not a PNG or JPEG");
  EXPECT_ERROR_MENTIONS(data::probe_image(dir.file("absent.png")), dir.file("absent.png"));

  // A JPEG whose header starts 100 KB in, behind large APP segments (as EXIF
  // thumbnails put it): the first 64 KiB are not enough, the whole file is.
  const Bytes jpg = jpeg_bytes(16, 8, 3, rgb_samples(16, 8, 3));
  Bytes padded(jpg.begin(), jpg.begin() + 2);  // SOI
  for (int k = 0; k < 2; ++k) {
    const std::size_t n = 50000;  // segment length, its two length bytes included
    padded.insert(padded.end(), {0xFF, 0xE1, static_cast<std::uint8_t>(n >> 8), static_cast<std::uint8_t>(n & 0xff)});
    padded.insert(padded.end(), n - 2, 0);
  }
  padded.insert(padded.end(), jpg.begin() + 2, jpg.end());
  write_bytes(dir.file("exif.jpg"), padded);
  EXPECT_EQ(data::probe_image(dir.file("exif.jpg")).width, 16u);
  EXPECT_EQ(data::load_image(dir.file("exif.jpg")).shape(), (Shape{3, 8, 16}));
}

TEST(ImageFolderErrors, MissingEmptyAndCorrupt) {
  TempDir dir;
  EXPECT_ERROR_MENTIONS(data::ImageFolder(dir.file("none")), "not a directory");
  EXPECT_ERROR_MENTIONS(data::ImageFolder(dir.path()), "no class subfolders");
  std::filesystem::create_directories(dir.file("a"));
  EXPECT_ERROR_MENTIONS(data::ImageFolder(dir.path()), "no .png, .jpg or .jpeg files");
  write_bytes(dir.file("a/bad.jpg"), Bytes{0xFF, 0xD8, 0xFF, 0xE0, 0, 16});
  // Found when the folder is indexed, not partway through an epoch.
  EXPECT_ERROR_MENTIONS(data::ImageFolder(dir.path()), "ImageFolder '" + dir.path() + "'",
                        dir.file("a/bad.jpg"), "JPEG", "byte offset");
  data::ImageFolderOptions unchecked;
  unchecked.check_headers = false;
  const data::ImageFolder ds(dir.path(), unchecked);
  EXPECT_ERROR_MENTIONS(ds.get(0), dir.file("a/bad.jpg"), "JPEG", "byte offset");
  data::ImageFolderOptions half;
  half.height = 4;
  EXPECT_ERROR_MENTIONS(data::ImageFolder(dir.path(), half), "height and width");
}

}  // namespace
}  // namespace convkit::testing

#pragma once
// Data sets of encoded images, decoded on demand (by the DataLoader's workers), as
// mxnet.gluon.data.vision's:
//   ImageFolderDataset  root/<class>/<image>: a folder per class, classes in sorted order
//   ImageListDataset    the images an im2rec .lst file lists ("index<TAB>label(s)<TAB>path")
//   ImageRecordDataset  an im2rec .rec file with its .idx beside it
// A sample is the image, (height, width, 3) uint8 RGB (flag 1) or (height, width, 1) (flag 0), and
// its label: the class as (1,) int32, or a list line's or a record's label(s) as (k,) float32.
//
//   auto train = std::make_shared<gdata::vision::ImageFolderDataset>("data/train");
//   train->synsets();   // {"cat", "dog"}
//   gdata::DataLoader loader(train, 64, true, "keep", crop_to_224, 8, gdata::to_tensor);
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gluon/data/dataset.hpp"

namespace mx::recordio {
class MXIndexedRecordIO;
}

namespace mx::gluon::data::vision {

class ImageFolderDataset : public Dataset {
 public:
  // Every sub-folder of root is a class (sorted by name: its label is its position); its files
  // ending in .jpg, .jpeg or .png (any case; sorted) are its samples, other files are skipped, as
  // MXNet skips them. mx::FileError naming the folder when root is missing or has no class
  // folder, or a class folder holds no image.
  explicit ImageFolderDataset(const std::string& root, int flag = 1);

  std::int64_t size() const override { return static_cast<std::int64_t>(items_.size()); }
  // Decodes sample i's file: mx::FileError naming the file when it is corrupt or truncated.
  Sample get(std::int64_t i) const override;
  const std::vector<std::string>& synsets() const { return synsets_; }        // the class names
  const std::vector<std::pair<std::string, int>>& items() const { return items_; }  // (path, label)

 private:
  int flag_;
  std::vector<std::string> synsets_;
  std::vector<std::pair<std::string, int>> items_;
};

class ImageListDataset : public Dataset {
 public:
  // list_file: im2rec's .lst, a line per image, "index<TAB>label<TAB>...<TAB>path" (at least one
  // label), the paths relative to root, as MXNet's ImageListDataset(root, imglist); read by
  // mx::im2rec::read_list. mx::FileError naming the file and the line for a line without a label
  // or path, or with an index or label that is not a number; an empty list is an mx::FileError too.
  ImageListDataset(const std::string& root, const std::string& list_file, int flag = 1);

  std::int64_t size() const override { return static_cast<std::int64_t>(items_.size()); }
  Sample get(std::int64_t i) const override;  // mx::FileError naming a missing or corrupt image

 private:
  int flag_;
  std::vector<std::pair<std::string, std::vector<float>>> items_;  // (path, labels)
};

class ImageRecordDataset : public Dataset {
 public:
  // filename: the .rec; its index is the .idx of the same name. Samples in the index's order.
  explicit ImageRecordDataset(const std::string& filename, int flag = 1);

  std::int64_t size() const override;
  // Reads and decodes record i: mx::FileError naming the file and the record's key when it is cut
  // short or its image is corrupt.
  Sample get(std::int64_t i) const override;

 private:
  std::string filename_;
  int flag_;
  std::shared_ptr<const recordio::MXIndexedRecordIO> records_;
};

}  // namespace mx::gluon::data::vision

"""convkit's zoo networks written in PyTorch, one definition each, for
benchmarks/pytorch_train.py (GPU and CPU throughput) and
benchmarks/structure_check.py (the layer-by-layer equivalence check).

Written out from src/models/zoo.cpp, layer for layer and in the same order,
so that `structure_check.py` can compare them row by row with
`convkit summary MODEL --json`. The Keras ports keep Keras' initialisation
(glorot-uniform weights, zero biases) and BatchNorm defaults (eps 1e-3,
momentum 0.99, i.e. 0.01 in PyTorch's convention), as the zoo does.
ReLUs are in place, as a PyTorch user tuning for speed writes them.
"""
from torch import nn


def keras_init(model):
    for m in model.modules():
        if isinstance(m, (nn.Conv2d, nn.Linear)):
            nn.init.xavier_uniform_(m.weight)
            if m.bias is not None:
                nn.init.zeros_(m.bias)
    return model


def keras_bn2d(channels):
    return nn.BatchNorm2d(channels, eps=1e-3, momentum=0.01)


def keras_bn1d(features):
    return nn.BatchNorm1d(features, eps=1e-3, momentum=0.01)


def conv_block(cin, cout, same, bn):
    # conv -> [BatchNorm] -> ReLU; 'same' for a 3x3 stride-1 conv is padding 1.
    layers = [nn.Conv2d(cin, cout, 3, padding=1 if same else 0)]
    if bn:
        layers.append(keras_bn2d(cout))
    return layers + [nn.ReLU(inplace=True)]


def fmnist_cnn(classes=10):
    # 28 -> same 28 -> pool 14 -> same 14 -> pool 7; 64*7*7 = 3136.
    return keras_init(nn.Sequential(
        *conv_block(1, 32, True, False), nn.MaxPool2d(2),
        *conv_block(32, 64, True, False), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(3136, 128), nn.ReLU(inplace=True), nn.Dropout(0.25),
        nn.Linear(128, classes)))


def cifar10_cnn(classes=10, bn=False):
    # 32 -> same 32 -> valid 30 -> pool 15 -> same 15 -> valid 13 -> pool 6; 64*6*6 = 2304.
    head = [nn.Flatten(), nn.Linear(2304, 512)]
    if bn:
        head.append(keras_bn1d(512))
    head += [nn.ReLU(inplace=True), nn.Dropout(0.5), nn.Linear(512, classes)]
    return keras_init(nn.Sequential(
        *conv_block(3, 32, True, bn), *conv_block(32, 32, False, bn), nn.MaxPool2d(2), nn.Dropout(0.25),
        *conv_block(32, 64, True, bn), *conv_block(64, 64, False, bn), nn.MaxPool2d(2), nn.Dropout(0.25),
        *head))


def cifar10_cnn_bn(classes=10):
    return cifar10_cnn(classes, bn=True)


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + identity)


def resnet18_cifar(classes=10):
    # torchvision's ResNet-18 with a 3x3 stride-1 stem and no max pool; PyTorch's init, as the zoo's.
    layers = [nn.Conv2d(3, 64, 3, 1, 1, bias=False), nn.BatchNorm2d(64), nn.ReLU(inplace=True)]
    cin = 64
    for cout, stride in [(64, 1), (128, 2), (256, 2), (512, 2)]:
        layers += [BasicBlock(cin, cout, stride), BasicBlock(cout, cout, 1)]
        cin = cout
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, classes)]
    return nn.Sequential(*layers)


# name: (constructor, input shape C, H, W, trainable parameters in convkit's zoo)
MODELS = {"fmnist-cnn": (fmnist_cnn, (1, 28, 28), 421_642),
          "cifar10-cnn": (cifar10_cnn, (3, 32, 32), 1_250_858),
          "cifar10-cnn-bn": (cifar10_cnn_bn, (3, 32, 32), 1_252_266),
          "resnet18-cifar": (resnet18_cifar, (3, 32, 32), 11_173_962)}


def create(name):
    """The network and its input shape; exits naming the known ones for an unknown name."""
    if name not in MODELS:
        raise SystemExit(f"unknown model '{name}' (known: {', '.join(MODELS)})")
    make, shape, expected = MODELS[name]
    model = make()
    params = sum(p.numel() for p in model.parameters())
    if params != expected:
        raise SystemExit(f"{name}: {params} trainable parameters, convkit's zoo has {expected}")
    return model, shape


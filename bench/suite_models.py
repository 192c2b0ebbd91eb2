"""The models of Kiln's model suites (bench/bench_suite.py): real models from
the libraries users train with, in small but real configurations (several
layers, widths of 64 to 256), with random weights.

Each entry builds, on the CPU and from a fixed seed, a `Workload`: the model
with its dropout and stochastic depth off (so that every mode computes the
same function and kiln's numerics can be compared with the CPU's), an input
batch, and the loss of a training step. Suites: "torchvision", "timm" (when
timm is installed), "huggingface", "moe" (mixture-of-experts decoders from transformers).
"""
import dataclasses

import torch

IMAGE_BATCH = 4
IMAGE_SIZE = 64
TOKEN_BATCH = 2
TOKENS = 32
VOCABULARY = 1000


@dataclasses.dataclass
class Workload:
    model: torch.nn.Module
    inputs: dict          # keyword arguments of model(**inputs)
    loss: object          # loss(model output, inputs) -> scalar tensor
    description: str


def _without_dropout(model):
    """Dropout and stochastic depth off, in train mode too: random ops draw
    from each device's own generator, so their results could not be compared."""
    for module in model.modules():
        name = type(module).__name__
        if ("Dropout" in name or "StochasticDepth" in name or name == "DropPath") and hasattr(module, "p"):
            module.p = 0.0
        if name == "DropPath" and hasattr(module, "drop_prob"):
            module.drop_prob = 0.0
    return model


def _image_workload(model, description, size=IMAGE_SIZE, classes=10):
    images = torch.randn(IMAGE_BATCH, 3, size, size)
    labels = torch.randint(0, classes, (IMAGE_BATCH,))

    def loss(output, inputs):
        logits = output.logits if hasattr(output, "logits") else output
        if isinstance(logits, (tuple, list)):  # GoogLeNet-style auxiliary heads
            logits = logits[0]
        return torch.nn.functional.cross_entropy(logits, labels.to(logits.device))

    return Workload(_without_dropout(model), {"x": images}, loss, description)


class _Positional(torch.nn.Module):
    """model(x) for models whose forward takes the batch positionally, so
    that every workload calls model(**inputs)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model(x)


def _torchvision(name, **arguments):
    def build():
        import torchvision
        model = getattr(torchvision.models, name)(num_classes=10, **arguments)
        details = ", ".join(f"{key}={value}" for key, value in arguments.items())
        return _image_workload(_Positional(model), f"torchvision {name}({details}), {IMAGE_BATCH}x3x{IMAGE_SIZE}x"
                                                   f"{IMAGE_SIZE}")
    return build


def _torchvision_vit():
    from torchvision.models.vision_transformer import VisionTransformer
    model = VisionTransformer(image_size=IMAGE_SIZE, patch_size=8, num_layers=4, num_heads=4, hidden_dim=128,
                              mlp_dim=256, num_classes=10)
    return _image_workload(_Positional(model), "torchvision VisionTransformer, 4 layers, width 128, patch 8")


def _torchvision_swin():
    from torchvision.models.swin_transformer import SwinTransformer
    model = SwinTransformer(patch_size=[4, 4], embed_dim=32, depths=[2, 2, 2], num_heads=[2, 4, 8], window_size=[4, 4],
                            num_classes=10)
    return _image_workload(_Positional(model), "torchvision SwinTransformer, depths 2-2-2, width 32, window 4")


def _timm(name, **arguments):
    def build():
        import timm
        model = timm.create_model(name, pretrained=False, num_classes=10, **arguments)
        details = ", ".join(f"{key}={value}" for key, value in arguments.items())
        return _image_workload(_Positional(model), f"timm {name}({details})")
    return build


def _timm_mixer():
    from timm.models.mlp_mixer import MlpMixer
    model = MlpMixer(num_classes=10, img_size=IMAGE_SIZE, patch_size=8, num_blocks=4, embed_dim=128)
    return _image_workload(_Positional(model), "timm MlpMixer, 4 blocks, width 128, patch 8")


def _language_model_inputs(masked):
    tokens = torch.randint(0, VOCABULARY, (TOKEN_BATCH, TOKENS))
    labels = tokens.clone()
    if masked:
        labels[:, ::3] = -100  # positions the loss ignores, as a masked-LM collator leaves them
    return {"input_ids": tokens, "labels": labels}


def _huggingface(config_name, model_name, masked=False, seq2seq=False, **config):
    def build():
        import transformers
        transformers.logging.set_verbosity_error()
        settings = dict(config)
        settings.setdefault("vocab_size", VOCABULARY)
        configuration = getattr(transformers, config_name)(**settings)
        for key in list(vars(configuration)):
            if "dropout" in key and isinstance(getattr(configuration, key), float):
                setattr(configuration, key, 0.0)
        model = getattr(transformers, model_name)(configuration)
        inputs = _language_model_inputs(masked)
        if seq2seq:
            inputs["labels"] = torch.randint(0, VOCABULARY, (TOKEN_BATCH, TOKENS // 2))
        details = ", ".join(f"{key}={value}" for key, value in config.items())
        return Workload(_without_dropout(model), inputs, lambda output, _: output.loss,
                        f"transformers {model_name}({details}), {TOKEN_BATCH}x{TOKENS} tokens")
    return build


def _huggingface_vit():
    import transformers
    configuration = transformers.ViTConfig(image_size=IMAGE_SIZE, patch_size=8, hidden_size=128, num_hidden_layers=4,
                                           num_attention_heads=4, intermediate_size=256, num_labels=10,
                                           hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    model = transformers.ViTForImageClassification(configuration)

    class Images(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, x):
            return self.model(pixel_values=x).logits

    return _image_workload(Images(), "transformers ViTForImageClassification, 4 layers, width 128, patch 8")


_DECODER = dict(hidden_size=128, num_hidden_layers=4, num_attention_heads=4, intermediate_size=256,
                max_position_embeddings=TOKENS * 2)
_ENCODER = dict(hidden_size=128, num_hidden_layers=4, num_attention_heads=4, intermediate_size=256,
                max_position_embeddings=TOKENS * 2)

# name -> (suite, builder)
MODELS = {
    "resnet18": ("torchvision", _torchvision("resnet18")),
    "resnet50": ("torchvision", _torchvision("resnet50")),
    "mobilenet_v2": ("torchvision", _torchvision("mobilenet_v2")),
    "mobilenet_v3_small": ("torchvision", _torchvision("mobilenet_v3_small")),
    "efficientnet_b0": ("torchvision", _torchvision("efficientnet_b0")),
    "convnext_tiny": ("torchvision", _torchvision("convnext_tiny")),
    "regnet_y_400mf": ("torchvision", _torchvision("regnet_y_400mf")),
    "shufflenet_v2_x0_5": ("torchvision", _torchvision("shufflenet_v2_x0_5")),
    "squeezenet1_1": ("torchvision", _torchvision("squeezenet1_1")),
    "densenet121": ("torchvision", _torchvision("densenet121")),
    "mnasnet0_5": ("torchvision", _torchvision("mnasnet0_5")),
    "vit_torchvision": ("torchvision", _torchvision_vit),
    "swin_torchvision": ("torchvision", _torchvision_swin),
    "timm_resnet18d": ("timm", _timm("resnet18d")),
    "timm_convnext_atto": ("timm", _timm("convnext_atto")),
    "timm_efficientnet_b0": ("timm", _timm("efficientnet_b0")),
    "timm_vit_tiny": ("timm", _timm("vit_tiny_patch16_224", img_size=IMAGE_SIZE, depth=4)),
    "timm_mixer": ("timm", _timm_mixer),
    "timm_regnetx_002": ("timm", _timm("regnetx_002")),
    "gpt2": ("huggingface", _huggingface("GPT2Config", "GPT2LMHeadModel", n_embd=128, n_layer=4, n_head=4,
                                         n_positions=TOKENS * 2)),
    "llama": ("huggingface", _huggingface("LlamaConfig", "LlamaForCausalLM", num_key_value_heads=2, **_DECODER)),
    "mistral": ("huggingface", _huggingface("MistralConfig", "MistralForCausalLM", num_key_value_heads=2,
                                            **_DECODER)),
    "qwen2": ("huggingface", _huggingface("Qwen2Config", "Qwen2ForCausalLM", num_key_value_heads=2, **_DECODER)),
    "phi": ("huggingface", _huggingface("PhiConfig", "PhiForCausalLM", **_DECODER)),
    "gemma": ("huggingface", _huggingface("GemmaConfig", "GemmaForCausalLM", num_key_value_heads=2, head_dim=32,
                                          **_DECODER)),
    "opt": ("huggingface", _huggingface("OPTConfig", "OPTForCausalLM", hidden_size=128, num_hidden_layers=4,
                                        num_attention_heads=4, ffn_dim=256, word_embed_proj_dim=128,
                                        max_position_embeddings=TOKENS * 2)),
    "bert": ("huggingface", _huggingface("BertConfig", "BertForMaskedLM", masked=True, **_ENCODER)),
    "roberta": ("huggingface", _huggingface("RobertaConfig", "RobertaForMaskedLM", masked=True, pad_token_id=1,
                                            **dict(_ENCODER, max_position_embeddings=TOKENS * 2 + 2))),
    "distilbert": ("huggingface", _huggingface("DistilBertConfig", "DistilBertForMaskedLM", masked=True, dim=128,
                                               n_layers=4, n_heads=4, hidden_dim=256,
                                               max_position_embeddings=TOKENS * 2)),
    "albert": ("huggingface", _huggingface("AlbertConfig", "AlbertForMaskedLM", masked=True, embedding_size=64,
                                           **_ENCODER)),
    "deberta_v2": ("huggingface", _huggingface("DebertaV2Config", "DebertaV2ForMaskedLM", masked=True,
                                               **_ENCODER)),
    "electra": ("huggingface", _huggingface("ElectraConfig", "ElectraForMaskedLM", masked=True, embedding_size=64,
                                            **_ENCODER)),
    "t5": ("huggingface", _huggingface("T5Config", "T5ForConditionalGeneration", seq2seq=True, d_model=128,
                                       d_kv=32, d_ff=256, num_layers=2, num_decoder_layers=2, num_heads=4,
                                       decoder_start_token_id=0, pad_token_id=0)),
    "bart": ("huggingface", _huggingface("BartConfig", "BartForConditionalGeneration", seq2seq=True, d_model=128,
                                         encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
                                         decoder_attention_heads=4, encoder_ffn_dim=256, decoder_ffn_dim=256,
                                         max_position_embeddings=TOKENS * 2)),
    "vit_huggingface": ("huggingface", _huggingface_vit),
    # Mixture-of-experts decoders (issue 37): 4 or 8 small experts, 2 per token.
    "mixtral": ("moe", _huggingface("MixtralConfig", "MixtralForCausalLM", num_key_value_heads=2,
                                    num_local_experts=4, num_experts_per_tok=2, **_DECODER)),
    "qwen2_moe": ("moe", _huggingface("Qwen2MoeConfig", "Qwen2MoeForCausalLM", num_key_value_heads=2, num_experts=4,
                                      num_experts_per_tok=2, moe_intermediate_size=128,
                                      shared_expert_intermediate_size=128, **_DECODER)),
    "qwen3_moe": ("moe", _huggingface("Qwen3MoeConfig", "Qwen3MoeForCausalLM", num_key_value_heads=2, head_dim=32,
                                      num_experts=4, num_experts_per_tok=2, moe_intermediate_size=128, **_DECODER)),
    "olmoe": ("moe", _huggingface("OlmoeConfig", "OlmoeForCausalLM", num_key_value_heads=2, num_experts=8,
                                  num_experts_per_tok=2, **_DECODER)),
    "granite_moe": ("moe", _huggingface("GraniteMoeConfig", "GraniteMoeForCausalLM", num_key_value_heads=2,
                                        num_local_experts=4, num_experts_per_tok=2, **_DECODER)),
    "deepseek_v3": ("moe", _huggingface("DeepseekV3Config", "DeepseekV3ForCausalLM", num_key_value_heads=4,
                                        n_routed_experts=4, n_shared_experts=1, num_experts_per_tok=2,
                                        moe_intermediate_size=128, kv_lora_rank=32, q_lora_rank=64,
                                        qk_rope_head_dim=16, qk_nope_head_dim=16, v_head_dim=32,
                                        first_k_dense_replace=1, n_group=1, topk_group=1, **_DECODER)),
    "gpt_oss": ("moe", _huggingface("GptOssConfig", "GptOssForCausalLM", num_key_value_heads=2, head_dim=32,
                                    num_local_experts=4, num_experts_per_tok=2, **_DECODER)),
}

SUITES = ("torchvision", "timm", "huggingface", "moe")

# The CI subset: a few of each library, quick to build and compile.
CI_MODELS = ["resnet18", "mobilenet_v3_small", "timm_convnext_atto", "gpt2", "bert", "bart", "mixtral"]


def build(name):
    """The model's Workload, on the CPU, from seed 0."""
    if name not in MODELS:
        raise KeyError(f"unknown model {name!r}; known: {', '.join(MODELS)}")
    torch.manual_seed(0)
    return MODELS[name][1]()


def suite_of(name):
    return MODELS[name][0]


def select(text):
    """Model names from 'all', 'ci', suite names and model names, comma-separated."""
    names = []
    for item in text.split(","):
        item = item.strip()
        if item == "all":
            found = list(MODELS)
        elif item == "ci":
            found = CI_MODELS
        elif item in SUITES:
            found = [name for name, (suite, _) in MODELS.items() if suite == item]
        else:
            if item not in MODELS:
                raise KeyError(f"unknown model or suite {item!r}; suites: {', '.join(SUITES)}, "
                               f"models: {', '.join(MODELS)}")
            found = [item]
        names.extend(name for name in found if name not in names)
    return names

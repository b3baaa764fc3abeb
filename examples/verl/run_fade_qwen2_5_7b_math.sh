#!/usr/bin/env bash
# FADE on Qwen2.5-7B with verl 0.9.1: GSM8K + MATH, rule-based rewards, vLLM rollouts, FSDP.
# Meant for one node of 8x H100 80GB (see README.md). Prepare the data first (README.md), then
#
#     bash examples/verl/run_fade_qwen2_5_7b_math.sh [more Hydra overrides]
#
# Every setting below is an ordinary verl Hydra override; the FADE-specific ones are marked.
# Environment variables (defaults in brackets) choose paths and sizes without editing the file.
set -xeuo pipefail

MODEL_PATH=${MODEL_PATH:-Qwen/Qwen2.5-7B}    # any Qwen2.5 7B-class causal LM (local dir or hub id)
DATA_DIR=${DATA_DIR:-$HOME/data}              # where verl's preprocess scripts wrote gsm8k/ and math/
GSM8K_DIR=${GSM8K_DIR:-$DATA_DIR/gsm8k}
MATH_DIR=${MATH_DIR:-$DATA_DIR/math}
N_GPUS=${N_GPUS:-8}                           # GPUs per node
NNODES=${NNODES:-1}
ROLLOUT_N=${ROLLOUT_N:-8}                     # rollouts per prompt (the group size G): 8 or 16
ROLLOUT_TP=${ROLLOUT_TP:-2}                   # vLLM tensor parallel size
H_STAR_RATIO=${H_STAR_RATIO:-0.5}             # FADE's entropy target, as a fraction of the first entropy
PROJECT=${PROJECT:-fade}
EXPERIMENT=${EXPERIMENT:-qwen2_5_7b_math_fade}
CKPT_DIR=${CKPT_DIR:-checkpoints/$PROJECT/$EXPERIMENT}
PYTHON=${PYTHON:-python3}

TRAIN_FILES=${TRAIN_FILES:-"['$GSM8K_DIR/train.parquet', '$MATH_DIR/train.parquet']"}
VAL_FILES=${VAL_FILES:-"['$GSM8K_DIR/test.parquet', '$MATH_DIR/test.parquet']"}

# FADE: the estimator, its parameters (+algorithm.fade.* is fade's own section of the algorithm
# config), and the trainer that feeds it verl's entropy each step (trainer.v1.trainer_mode=fade).
# The last FADE line makes every Ray process import fade's verl plugin even where the entry point
# is not installed (fade on PYTHONPATH); it is what multi-node runs need, and harmless on one node.
# No KL term and no entropy bonus: FADE's sign knob is what holds the entropy up.
"$PYTHON" -m verl.trainer.main_ppo \
    algorithm.adv_estimator=fade \
    +algorithm.fade.h_star_ratio="$H_STAR_RATIO" \
    trainer.use_v1=True \
    trainer.v1.trainer_mode=fade \
    +ray_kwargs.ray_init.runtime_env.env_vars.VERL_USE_EXTERNAL_MODULES=fade.integrations.verl \
    algorithm.use_kl_in_reward=False \
    actor_rollout_ref.actor.use_kl_loss=False \
    actor_rollout_ref.actor.entropy_coeff=0 \
    actor_rollout_ref.actor.loss_agg_mode=token-mean \
    data.train_files="$TRAIN_FILES" \
    data.val_files="$VAL_FILES" \
    data.train_batch_size=256 \
    data.max_prompt_length=1024 \
    data.max_response_length=3072 \
    data.filter_overlong_prompts=True \
    data.truncation=error \
    actor_rollout_ref.model.path="$MODEL_PATH" \
    actor_rollout_ref.model.use_remove_padding=True \
    actor_rollout_ref.model.enable_gradient_checkpointing=True \
    actor_rollout_ref.actor.optim.lr=1e-6 \
    actor_rollout_ref.actor.ppo_mini_batch_size=64 \
    actor_rollout_ref.actor.use_dynamic_bsz=True \
    actor_rollout_ref.actor.ppo_max_token_len_per_gpu=16384 \
    actor_rollout_ref.actor.fsdp_config.param_offload=False \
    actor_rollout_ref.actor.fsdp_config.optimizer_offload=False \
    actor_rollout_ref.rollout.name=vllm \
    actor_rollout_ref.rollout.n="$ROLLOUT_N" \
    actor_rollout_ref.rollout.tensor_model_parallel_size="$ROLLOUT_TP" \
    actor_rollout_ref.rollout.gpu_memory_utilization=0.6 \
    actor_rollout_ref.rollout.log_prob_max_token_len_per_gpu=32768 \
    trainer.critic_warmup=0 \
    trainer.logger='["console","wandb"]' \
    trainer.project_name="$PROJECT" \
    trainer.experiment_name="$EXPERIMENT" \
    trainer.default_local_dir="$CKPT_DIR" \
    trainer.n_gpus_per_node="$N_GPUS" \
    trainer.nnodes="$NNODES" \
    trainer.save_freq=20 \
    trainer.test_freq=10 \
    trainer.total_epochs=10 \
    "$@"

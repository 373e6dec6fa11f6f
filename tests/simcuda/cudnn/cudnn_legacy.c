/* placeholder: being written (simcuda cuDNN stand-in). */
typedef int simcudnn_cudnn_legacy_placeholder;

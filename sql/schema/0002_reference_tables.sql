-- Reference tables: published hardware specs, loaded from sql/reference/*.csv on every open
-- when the CSV changed. Each row cites where its figures come from.

-- table gpu_models: reference; lake
CREATE TABLE gpu_models (
    model               VARCHAR PRIMARY KEY,  -- short name used everywhere: 'H100', 'MI300X', ...
    vendor              VARCHAR NOT NULL,
    full_name           VARCHAR,
    architecture        VARCHAR,
    form_factor         VARCHAR,              -- 'SXM', 'OAM', 'PCIe', 'Superchip', ...
    tdp_w               DOUBLE NOT NULL,      -- board power limit, W
    idle_w              DOUBLE,               -- typical idle draw, W
    bf16_tflops         DOUBLE NOT NULL,      -- dense BF16 tensor TFLOPS (no sparsity)
    fp8_tflops          DOUBLE,               -- dense FP8 TFLOPS (NULL: not supported)
    hbm_gb              DOUBLE NOT NULL,
    hbm_tbs             DOUBLE NOT NULL,      -- memory bandwidth, TB/s
    scaleup_gbs         DOUBLE NOT NULL,      -- GPU-to-GPU scale-up link, GB/s bidirectional per GPU
    scaleup_link        VARCHAR,              -- 'NVLink 3', 'Infinity Fabric', 'HCCS', ...
    pcie_gen            INTEGER NOT NULL,
    pcie_lanes          INTEGER,
    release_year        INTEGER,
    source              VARCHAR NOT NULL      -- where these figures are published
);

-- table nic_models: reference; lake
CREATE TABLE nic_models (
    model               VARCHAR PRIMARY KEY,  -- 'ConnectX-7', '100GbE', ...
    vendor              VARCHAR,
    line_rate_gbps      DOUBLE NOT NULL,      -- per port, Gb/s
    ports               INTEGER,
    pcie_gen            INTEGER NOT NULL,
    pcie_lanes          INTEGER NOT NULL,
    protocols           VARCHAR,              -- 'InfiniBand, Ethernet (RoCE)'
    source              VARCHAR NOT NULL
);

-- Sample database 'orchestra', file orchestra_v2.sql: same schema as every file in this folder, different rows.
-- Written for baton's sample set; materialized into orchestra/<file>.sqlite by baton-data.

CREATE TABLE musician (
    musician_id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    instrument TEXT,
    section TEXT,
    joined_year INTEGER,
    salary INTEGER
);

CREATE TABLE concert (
    concert_id INTEGER PRIMARY KEY,
    title TEXT,
    venue TEXT,
    city TEXT,
    concert_date TEXT,
    attendance INTEGER
);

CREATE TABLE performance (
    concert_id INTEGER NOT NULL REFERENCES concert (concert_id),
    musician_id INTEGER NOT NULL REFERENCES musician (musician_id),
    is_soloist INTEGER NOT NULL,
    PRIMARY KEY (concert_id, musician_id)
);

INSERT INTO musician VALUES (1, 'Noor Brandt', 'clarinet', 'woodwinds', 2012, 59500);
INSERT INTO musician VALUES (2, 'Felix Adeyemi', 'double bass', 'strings', 2019, 62000);
INSERT INTO musician VALUES (3, 'Yuki Haas', 'violin', 'strings', 1999, 39000);
INSERT INTO musician VALUES (4, 'Felix Strand', 'trombone', 'brass', 2014, 57000);
INSERT INTO musician VALUES (5, 'Noor Strand', 'oboe', 'woodwinds', 2022, 72000);
INSERT INTO musician VALUES (6, 'Anton Sato', 'violin', 'strings', 2006, 50500);
INSERT INTO musician VALUES (7, 'Jonas Ricci', 'timpani', 'percussion', 2019, 53000);
INSERT INTO musician VALUES (8, 'Noor Oyelaran', 'horn', 'brass', 1998, 45000);
INSERT INTO musician VALUES (9, 'Maren Kovac', 'clarinet', 'woodwinds', 2009, 44500);
INSERT INTO musician VALUES (10, 'Maren Moreau', 'flute', 'woodwinds', 2008, 69000);
INSERT INTO musician VALUES (11, 'Noor Weiss', 'cello', 'strings', 1999, 38500);
INSERT INTO musician VALUES (12, 'Ilse Sato', 'double bass', 'strings', 2013, 73500);
INSERT INTO musician VALUES (13, 'Felix Novak', 'trumpet', 'brass', 2012, 75500);
INSERT INTO musician VALUES (14, 'Jonas Oyelaran', 'violin', 'strings', 2006, 65500);

INSERT INTO concert VALUES (1, 'Brahms Evening', 'Stadtcasino', 'Basel', '2023-10-12', 1440);
INSERT INTO concert VALUES (2, 'New Year Concert', 'Rudolfinum', 'Prague', '2023-05-02', 790);
INSERT INTO concert VALUES (3, 'Winter Lights', 'Rudolfinum', 'Prague', '2023-09-20', 430);
INSERT INTO concert VALUES (4, 'Youth Showcase', 'Konzerthaus', 'Vienna', '2023-01-19', 1170);
INSERT INTO concert VALUES (5, 'Dvorak Weekend', 'Rudolfinum', 'Prague', '2023-02-28', 930);
INSERT INTO concert VALUES (6, 'New Year Concert', 'Philharmonie', 'Berlin', '2023-07-19', 1000);
INSERT INTO concert VALUES (7, 'Autumn Festival', 'Stadtcasino', 'Basel', '2023-12-26', 2020);
INSERT INTO concert VALUES (8, 'Winter Lights', 'Konzerthaus', 'Vienna', '2023-07-11', 450);

INSERT INTO performance VALUES (1, 1, 0);
INSERT INTO performance VALUES (1, 3, 0);
INSERT INTO performance VALUES (1, 4, 0);
INSERT INTO performance VALUES (1, 5, 1);
INSERT INTO performance VALUES (1, 9, 1);
INSERT INTO performance VALUES (2, 4, 1);
INSERT INTO performance VALUES (2, 6, 0);
INSERT INTO performance VALUES (2, 10, 0);
INSERT INTO performance VALUES (2, 14, 0);
INSERT INTO performance VALUES (3, 7, 0);
INSERT INTO performance VALUES (3, 12, 1);
INSERT INTO performance VALUES (4, 5, 0);
INSERT INTO performance VALUES (4, 6, 1);
INSERT INTO performance VALUES (4, 10, 1);
INSERT INTO performance VALUES (5, 9, 0);
INSERT INTO performance VALUES (5, 11, 1);
INSERT INTO performance VALUES (5, 12, 0);
INSERT INTO performance VALUES (5, 13, 1);
INSERT INTO performance VALUES (6, 6, 0);
INSERT INTO performance VALUES (6, 8, 0);
INSERT INTO performance VALUES (7, 1, 0);
INSERT INTO performance VALUES (7, 7, 1);
INSERT INTO performance VALUES (7, 10, 0);
INSERT INTO performance VALUES (7, 12, 0);
INSERT INTO performance VALUES (8, 2, 0);
INSERT INTO performance VALUES (8, 10, 0);
